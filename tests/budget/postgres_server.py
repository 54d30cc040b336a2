#!/usr/bin/env python3
"""A PostgreSQL server of the tests' own, from Debian's packages (postgresql-15), in a
temporary folder on 127.0.0.1 and a free port; stopped and removed on exit. Stdlib only.

    with PostgresServer() as pg:
        url = pg.new_database("budget_1", password="pw")   # postgresql://headroom:pw@127.0.0.1:PORT/budget_1

As root (CI), the server runs as the `postgres` user the package creates: initdb refuses root.
"""
import glob
import os
import shutil
import socket
import subprocess
import tempfile


def _bin_dir():
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))
    if not found:
        raise RuntimeError("no PostgreSQL server: install Debian's postgresql (scripts/install-deps.sh --test)")
    return os.path.dirname(found[-1])


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class PostgresServer:
    def __init__(self):
        self.bin = _bin_dir()
        self.port = _free_port()
        self.dir = tempfile.mkdtemp(prefix="headroom-pg-")
        self.data = os.path.join(self.dir, "data")
        self.as_user = []
        if os.geteuid() == 0:
            shutil.chown(self.dir, "postgres", "postgres")
            self.as_user = ["runuser", "-u", "postgres", "--"]

    def _run(self, tool, *args):
        subprocess.run(self.as_user + [os.path.join(self.bin, tool)] + list(args), check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, cwd=self.dir)

    def __enter__(self):
        # trust on loopback: the URL's password is the tests' check that none is ever printed.
        self._run("initdb", "-D", self.data, "-U", "headroom", "-A", "trust", "-E", "UTF8", "--no-sync")
        self._run("pg_ctl", "-D", self.data, "-l", os.path.join(self.dir, "log"), "-w", "-t", "60", "-o",
                  "-c listen_addresses=127.0.0.1 -p %d -k %s -c fsync=off -c max_connections=100"
                  % (self.port, self.dir), "start")
        return self

    def __exit__(self, *exc):
        try:
            self._run("pg_ctl", "-D", self.data, "-m", "immediate", "-w", "stop")
        finally:
            shutil.rmtree(self.dir, ignore_errors=True)

    def sql(self, statement, database="postgres"):
        r = subprocess.run([os.path.join(self.bin, "psql"), "-h", "127.0.0.1", "-p", str(self.port), "-U",
                            "headroom", "-d", database, "-v", "ON_ERROR_STOP=1", "-At", "-c", statement],
                           capture_output=True, text=True, check=True)
        return r.stdout.strip()

    def new_database(self, name, password="s3cret-pw"):
        self.sql('CREATE DATABASE "%s"' % name)
        return "postgresql://headroom:%s@127.0.0.1:%d/%s" % (password, self.port, name)
