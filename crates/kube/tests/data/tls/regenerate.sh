#!/usr/bin/env bash
# Regenerates the TLS fixtures of podplace-kube's kubeconfig tests
# (src/connect/tests.rs): a CA, a server certificate for 127.0.0.1, an X.509
# v1 client certificate (what `openssl x509 -req` makes without -extfile,
# which kubectl accepts and webpki cannot parse), an X.509 v3 client
# certificate, and a key that belongs to neither. Valid for 100 years.
set -euo pipefail
cd "$(dirname "$0")"
days=36500
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
  -keyout ca.key -out ca.crt -days "$days" -subj "/CN=podplace-test-ca"
openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
  -keyout server.key -out server.csr -subj "/CN=127.0.0.1"
printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\n' > server.ext
openssl x509 -req -in server.csr -CA ca.crt -CAkey ca.key -CAcreateserial \
  -out server.crt -days "$days" -extfile server.ext
# v1: no -extfile.
openssl req -newkey rsa:2048 -nodes -keyout client-v1.key -out client-v1.csr \
  -subj "/O=system:masters/CN=v1-admin"
openssl x509 -req -in client-v1.csr -CA ca.crt -CAkey ca.key -CAcreateserial \
  -out client-v1.crt -days "$days"
printf 'extendedKeyUsage=clientAuth\n' > client.ext
openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
  -keyout client-v3.key -out client-v3.csr -subj "/O=system:masters/CN=v3-admin"
openssl x509 -req -in client-v3.csr -CA ca.crt -CAkey ca.key -CAcreateserial \
  -out client-v3.crt -days "$days" -extfile client.ext
openssl genpkey -algorithm ec -pkeyopt ec_paramgen_curve:P-256 -out other.key
rm -f ./*.csr ./*.ext ca.srl ca.key
