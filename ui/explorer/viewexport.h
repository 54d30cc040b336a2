// SPDX-License-Identifier: MIT
#pragma once

#include <QImage>
#include <QSize>
#include <QString>

namespace headroom {

class ExplorerView;

/// Writes views to files and the clipboard: PNG (raster), SVG and PDF (vectors where the
/// view draws through QCustomPlot), chosen by the file's suffix.
namespace ViewExport {

/// `size` empty: the view's own size. False with `error` set when the file cannot be written.
bool save(ExplorerView* view, const QString& path, QString* error, QSize size = {});
QImage image(ExplorerView* view, QSize size = {});
/// Writes an image from image() as `path` says (.png, .jpg; PNG without a suffix). Safe on a
/// worker thread: the postmortem encodes its images there.
bool writeImage(const QImage& image, const QString& path, QString* error);
void copyToClipboard(ExplorerView* view);
/// "PNG image (*.png);;SVG drawing (*.svg);;PDF document (*.pdf)"
QString fileFilter();

} // namespace ViewExport

} // namespace headroom
