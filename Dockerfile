# syntax=docker/dockerfile:1
#
#   docker build -t webhookd .
#   docker run -d --name webhookd -p 8080:8080 -v webhookd-data:/data \
#     -e WEBHOOKD_DOWNSTREAM_URL=http://core:9000/webhooks \
#     -e WEBHOOKD_STRIPE_SECRETS=whsec_... \
#     --stop-timeout 20 webhookd
#
# --stop-timeout must exceed WEBHOOKD_SHUTDOWN_GRACE (default: the 10s
# dispatch timeout) by a few seconds, or Docker's SIGKILL cuts the drain.

# Build: Debian bookworm, so the binary links against the glibc that the
# runtime image (Debian 12) has.
FROM golang:1.26-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
# .ci/build is the one build command, shared with CI:
# CGO_ENABLED=1 go build -trimpath -ldflags='-s -w' -o /out/webhookd ./cmd/webhookd
RUN --mount=type=cache,target=/root/.cache/go-build \
    bash .ci/build /out && mkdir -p /out/data

# Run: glibc and CA certificates, no shell, no package manager, non-root.
FROM gcr.io/distroless/base-debian12:nonroot
COPY --from=build /out/webhookd /usr/local/bin/webhookd
# The LMDB environment. A named volume inherits this owner; a bind-mounted
# host directory must be writable by uid 65532.
COPY --from=build --chown=65532:65532 /out/data /data
ENV WEBHOOKD_ADDR=:8080 \
    WEBHOOKD_DATA_DIR=/data
VOLUME ["/data"]
EXPOSE 8080
USER 65532:65532
# No curl in the image: the binary probes its own /healthz.
HEALTHCHECK --interval=15s --timeout=5s --start-period=10s --retries=3 \
    CMD ["/usr/local/bin/webhookd", "healthcheck"]
ENTRYPOINT ["/usr/local/bin/webhookd"]
CMD ["serve"]
