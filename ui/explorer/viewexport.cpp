// SPDX-License-Identifier: MIT
#include "ui/explorer/viewexport.h"

#include "ui/explorer/explorerview.h"

#include <qcustomplot.h>

#include <QApplication>
#include <QClipboard>
#include <QFileInfo>
#include <QPdfWriter>
#include <QSvgGenerator>
#include <QtMath>

#include <algorithm>

namespace headroom::ViewExport {

namespace {

QSize sizeFor(ExplorerView* view, QSize size)
{
    if (size.isEmpty())
        size = view->exportSize();
    if (size.isEmpty())
        size = QSize(1200, 700);
    return size;
}

} // namespace

QImage image(ExplorerView* view, QSize size)
{
    size = sizeFor(view, size);
    // Sharp on a high-DPI screen: as many pixels as the screen shows for `size`
    // (twice as many at 200% scaling), painted in the same logical coordinates.
    const qreal dpr = std::max<qreal>(1.0, view->widget()->devicePixelRatioF());
    // Opaque (filled below): RGB32 draws as fast and is written as RGB, a quarter fewer bytes
    // for the PNG encoder than RGBA.
    QImage img(QSize(qCeil(size.width() * dpr), qCeil(size.height() * dpr)), QImage::Format_RGB32);
    img.setDevicePixelRatio(dpr);
    img.fill(view->widget()->palette().color(QPalette::Base));
    QCPPainter painter(&img);
    painter.setRenderHint(QPainter::Antialiasing);
    view->render(&painter, size);
    painter.end();
    return img;
}

bool writeImage(const QImage& image, const QString& path, QString* error)
{
    if (image.save(path, QFileInfo(path).suffix().isEmpty() ? "PNG" : nullptr))
        return true;
    if (error)
        *error = QObject::tr("Cannot write %1").arg(path);
    return false;
}

bool save(ExplorerView* view, const QString& path, QString* error, QSize size)
{
    size = sizeFor(view, size);
    const QString suffix = QFileInfo(path).suffix().toLower();
    auto fail = [&](const QString& why) {
        if (error)
            *error = why;
        return false;
    };
    if (suffix == QLatin1String("svg")) {
        QSvgGenerator gen;
        gen.setFileName(path);
        gen.setSize(size);
        gen.setViewBox(QRect(QPoint(0, 0), size));
        gen.setTitle(view->viewTitle());
        gen.setDescription(QStringLiteral("Headroom"));
        QCPPainter painter;
        if (!painter.begin(&gen))
            return fail(QObject::tr("Cannot write %1").arg(path));
        painter.setMode(QCPPainter::pmVectorized);
        painter.setMode(QCPPainter::pmNoCaching);
        painter.fillRect(QRect(QPoint(0, 0), size), view->widget()->palette().color(QPalette::Base));
        view->render(&painter, size);
        painter.end();
        return QFileInfo::exists(path) || fail(QObject::tr("Cannot write %1").arg(path));
    }
    if (suffix == QLatin1String("pdf")) {
        QPdfWriter writer(path);
        writer.setResolution(96);
        writer.setPageSize(QPageSize(QSizeF(size.width() * 72.0 / 96.0, size.height() * 72.0 / 96.0), QPageSize::Point,
                                     QString(), QPageSize::ExactMatch));
        writer.setPageMargins(QMarginsF(0, 0, 0, 0));
        writer.setCreator(QStringLiteral("Headroom"));
        writer.setTitle(view->viewTitle());
        QCPPainter painter;
        if (!painter.begin(&writer))
            return fail(QObject::tr("Cannot write %1").arg(path));
        painter.setMode(QCPPainter::pmVectorized);
        painter.setMode(QCPPainter::pmNoCaching);
        view->render(&painter, size);
        painter.end();
        return true;
    }
    if (suffix == QLatin1String("png") || suffix == QLatin1String("jpg") || suffix.isEmpty())
        return writeImage(image(view, size), path, error);
    return fail(QObject::tr("Unknown export format \"%1\": use .png, .svg or .pdf").arg(suffix));
}

void copyToClipboard(ExplorerView* view)
{
    QApplication::clipboard()->setImage(image(view));
}

QString fileFilter()
{
    return QObject::tr("PNG image (*.png);;SVG drawing (*.svg);;PDF document (*.pdf)");
}

} // namespace headroom::ViewExport
