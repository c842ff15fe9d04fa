#!/usr/bin/env python3
"""A loopback S3 server (moto in server mode) for tracereplay's object-storage tests.

    server.py BUCKET=DIR[:PREFIX]... [--forbidden BUCKET]

Creates each bucket and uploads every file under DIR to it (keys: PREFIX/relative path), and
each --forbidden bucket (empty). From then on the server checks every request's signature: the
credentials it prints are an IAM user's that may read (and write) every bucket but the forbidden
ones. It prints one JSON line, {"endpoint", "access_key", "secret_key"}, then serves until stdin
closes; meanwhile each line `put BUCKET KEY FILE` on stdin uploads FILE with those credentials
and answers `ok`.
"""
import json
import os
import sys

uploads, forbidden = [], []
args = sys.argv[1:]
while args:
    a = args.pop(0)
    if a == "--forbidden":
        forbidden.append(args.pop(0))
    else:
        bucket, _, rest = a.partition("=")
        directory, _, prefix = rest.partition(":")
        uploads.append((bucket, directory, prefix.strip("/")))

files = [
    (bucket, os.path.join(root, name), prefix, directory)
    for bucket, directory, prefix in uploads
    for root, _, names in os.walk(directory)
    for name in sorted(names)
]
buckets = sorted({b for b, _, _ in uploads} | set(forbidden))
# Requests the set-up makes before signatures are checked: the IAM user, its key and policy,
# each bucket, each upload.
os.environ["INITIAL_NO_AUTH_ACTION_COUNT"] = str(3 + len(buckets) + len(files))

import boto3  # noqa: E402
from moto.server import ThreadedMotoServer  # noqa: E402

server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
server.start()
_, port = server.get_host_and_port()
endpoint = f"http://127.0.0.1:{port}"
admin = dict(
    endpoint_url=endpoint,
    aws_access_key_id="setup",
    aws_secret_access_key="setup",
    region_name="us-east-1",
)
iam = boto3.client("iam", **admin)
iam.create_user(UserName="reader")
key = iam.create_access_key(UserName="reader")["AccessKey"]
allowed = [b for b in buckets if b not in forbidden]
statements = [
    {
        "Effect": "Allow",
        "Action": ["s3:*"],
        "Resource": [f"arn:aws:s3:::{b}" for b in allowed] + [f"arn:aws:s3:::{b}/*" for b in allowed],
    }
]
iam.put_user_policy(
    UserName="reader",
    PolicyName="read",
    PolicyDocument=json.dumps({"Version": "2012-10-17", "Statement": statements}),
)
s3 = boto3.client("s3", **admin)
for b in buckets:
    s3.create_bucket(Bucket=b)
for bucket, path, prefix, directory in files:
    rel = os.path.relpath(path, directory).replace(os.sep, "/")
    with open(path, "rb") as f:
        s3.put_object(Bucket=bucket, Key=f"{prefix}/{rel}" if prefix else rel, Body=f.read())
print(
    json.dumps(
        {"endpoint": endpoint, "access_key": key["AccessKeyId"], "secret_key": key["SecretAccessKey"]}
    ),
    flush=True,
)
reader = boto3.client(
    "s3",
    endpoint_url=endpoint,
    aws_access_key_id=key["AccessKeyId"],
    aws_secret_access_key=key["SecretAccessKey"],
    region_name="us-east-1",
)
for line in sys.stdin:
    command, bucket, key_name, path = line.split()
    assert command == "put", line
    with open(path, "rb") as f:
        reader.put_object(Bucket=bucket, Key=key_name, Body=f.read())
    print("ok", flush=True)
server.stop()
