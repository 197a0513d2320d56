"""Drive a blockfs cluster through Debian's fsspec WebHDFS filesystem and
pandas, as a WebHDFS client written elsewhere would (TestFsspecClient in
python_test.go runs it).

Usage: fsspec_client.py HOST PORT USER BIG_BYTES [CA CERT KEY]

With CA, CERT and KEY the namenode and datanodes are reached over HTTPS
with that client certificate (mTLS). Prints one JSON object of results on
the last line of stdout; any failed check raises and exits non-zero.
"""

import hashlib
import json
import os
import random
import sys
import tempfile

import fsspec
import pandas
import requests
from fsspec.implementations.webhdfs import WebHDFS

host, port, user, big = sys.argv[1], int(sys.argv[2]), sys.argv[3], int(sys.argv[4])
tls = sys.argv[5:8]
opts = {"host": host, "port": port, "user": user, "use_https": bool(tls)}
if tls:
    # Every session fsspec makes (pandas' too) trusts the cluster CA and
    # presents the user's certificate; user.name is then ignored.
    connect = WebHDFS._connect

    def connect_tls(self):
        connect(self)
        self.session.verify = tls[0]
        self.session.cert = (tls[1], tls[2])

    WebHDFS._connect = connect_tls
fs = WebHDFS(**opts)

out = {}


def expect(cond, what):
    if not cond:
        raise AssertionError(what)


# mkdir, info, ls
fs.mkdir("/py/dir")
info = fs.info("/py/dir")
expect(info["type"] == "directory", info)

# CREATE in its two steps through fsspec's own session: Hadoop's
# documented upload, one request for the whole file.
data = random.Random(1).randbytes(big)
r = fs._call("CREATE", "put", "/py/dir/big.bin", redirect=False, overwrite="true")
expect(r.status_code == 307, r.status_code)
r2 = fs.session.put(fs._apply_proxy(r.headers["Location"]), data=data)
expect(r2.status_code == 201, (r2.status_code, r2.text))
out["big_sha256"] = hashlib.sha256(data).hexdigest()

names = fs.ls("/py/dir")
expect(names == ["/py/dir/big.bin"], names)
info = fs.info("/py/dir/big.bin")
expect(info["type"] == "file" and info["size"] == big, info)

# cat with ranges: fsspec reads through OPEN offset/length.
expect(fs.cat_file("/py/dir/big.bin", 5, 105) == data[5:105], "range 5..105")
expect(fs.cat_file("/py/dir/big.bin", big - 10, None) == data[big - 10 :], "tail")
expect(fs.cat_file("/py/dir/big.bin", big + 5, big + 10) == b"", "past the end")

# get: the whole file back.
expect(fs.cat_file("/py/dir/big.bin") == data, "cat whole file")

# The Go side wrote /go/big.bin and /go/table.csv before running this.
got = fs.cat_file("/go/big.bin")
out["go_big_sha256"] = hashlib.sha256(got).hexdigest()
out["go_big_size"] = len(got)

# pandas reads a CSV from a webhdfs:// URL through the same fsspec
# filesystem (fsspec reuses the instance for the same options).
df = pandas.read_csv("webhdfs://%s:%d/go/table.csv" % (host, port), storage_options=opts)
out["csv_rows"] = len(df)
out["csv_sum"] = int(df["value"].sum())
out["csv_columns"] = list(df.columns)

# mv and rm.
fs.mv("/py/dir/big.bin", "/py/moved.bin")
expect(not fs.exists("/py/dir/big.bin") and fs.exists("/py/moved.bin"), "mv")
fs.rm("/py/dir")
expect(not fs.exists("/py/dir"), "rm")
try:
    fs.info("/py/nothing")
    raise AssertionError("info of a missing path succeeded")
except FileNotFoundError:
    pass

# fsspec's own writer: open(..., "wb") CREATEs an empty file, then POSTs
# every chunk (5 MiB) as an APPEND to the CREATE's datanode URL. Written
# in uneven pieces so that chunks do not line up with writes.
wb = random.Random(2).randbytes(big)
with fs.open("/py/wb.bin", "wb") as f:
    for i in range(0, big, 3 << 20 | 17):
        f.write(wb[i : i + (3 << 20 | 17)])
got = fs.cat_file("/py/wb.bin")
expect(got == wb, "open(wb) read back: %d bytes of %d" % (len(got), big))
out["wb_sha256"] = hashlib.sha256(wb).hexdigest()

# put() of a local file: the same writer under the hood.
with tempfile.TemporaryDirectory() as d:
    local = os.path.join(d, "local.bin")
    small = random.Random(3).randbytes(min(big, 6 << 20) + 3)
    with open(local, "wb") as f:
        f.write(small)
    fs.put(local, "/py/put.bin")
    expect(fs.cat_file("/py/put.bin") == small, "put read back")
    fs.get("/py/put.bin", os.path.join(d, "back.bin"))
    with open(os.path.join(d, "back.bin"), "rb") as f:
        expect(f.read() == small, "get of a put file")

# open(..., "ab"): APPEND at the namenode, then the chunks to its URL.
with fs.open("/py/put.bin", "ab") as f:
    f.write(b"tail")
expect(fs.cat_file("/py/put.bin") == small + b"tail", "append read back")
out["appended_size"] = fs.info("/py/put.bin")["size"]

# A CSV written through fsspec, read by pandas from its webhdfs:// URL.
with fs.open("/py/table.csv", "wb") as f:
    f.write(b"k,v\n" + b"".join(b"k%d,%d\n" % (i, i * 7) for i in range(500)))
df = pandas.read_csv("webhdfs://%s:%d/py/table.csv" % (host, port), storage_options=opts)
out["py_csv_rows"] = len(df)
out["py_csv_sum"] = int(df["v"].sum())

# Appending to a file someone is writing is refused, as HDFS refuses it:
# by Append, which the datanode the namenode redirects to calls before it
# stores a byte.
r = fs.session.post(fs.url + "/go/open.bin", params=dict(fs.pars, op="APPEND"), allow_redirects=False)
expect(r.status_code == 307, "APPEND's first step redirects")
r = fs.session.post(r.headers["Location"], data=b"x", allow_redirects=False)
out["append_open"] = "%d %s" % (r.status_code, r.json()["RemoteException"]["exception"])

out["checksum"] = fs.ukey("/py/moved.bin")
print(json.dumps(out))
