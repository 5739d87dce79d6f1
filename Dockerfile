# The watcher's image: azevac, linked statically against musl, and the CA certificates, and nothing else
# (no shell, no libc, no package manager). The binary is built outside the image (cargo, target
# x86_64- or aarch64-unknown-linux-musl) and staged with the certificates into the build context:
#
#   context/azevac-amd64, context/azevac-arm64   the binaries (TARGETARCH picks one; buildx sets it)
#   context/ca-certificates.crt                  a PEM bundle (Debian's ca-certificates)
#   context/fs/tmp/                              an empty folder, mode 1777: the image's writable /tmp
#
# scripts/check-image stages it, builds the image with buildah and runs azevac from its unpacked
# filesystem against the emulator; .github/workflows/release.yml stages it for both architectures and
# publishes the image. Why static and where TLS roots come from: docs/src/install.md.
FROM scratch
ARG TARGETARCH
COPY --chmod=0755 azevac-${TARGETARCH} /azevac
# The AWS SDK's TLS (rustls) takes its roots from the system's store, read by rustls-native-certs: here
# the one bundle, named explicitly so that nothing is probed for.
COPY --chmod=0644 ca-certificates.crt /etc/ssl/certs/ca-certificates.crt
ENV SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt
# Where the watcher writes its health file (AZEVAC_HEALTH_FILE=/tmp/azevac-health.json in the
# templates): writable by anyone, sticky, as /tmp is. COPY keeps the mode of what is inside the folder it
# copies, not of the folder itself: hence fs/ and its tmp/.
COPY fs/ /
# Not root: a numeric user needs no /etc/passwd (65532 is the conventional "nonroot" of distroless images).
USER 65532:65532
ENTRYPOINT ["/azevac"]
