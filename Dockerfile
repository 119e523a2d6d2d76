# syntax=docker/dockerfile:1
#
# One image for every shape of Vitola: `vitola serve` (all in one process),
# `vitola serve --component NAME` (router, shim, catalog, users, venues),
# `vitola migrate` and `vitola keys …`. compose.yaml runs the scale-out shape
# from it.
#
#   docker build -t vitola .
#   docker run --rm -p 8080:8080 -p 8081:8081 vitola serve --demo

# ---- build ----------------------------------------------------------------
FROM golang:1.26 AS build
WORKDIR /src
# Modules first, so a source change does not download them again.
COPY go.mod go.sum ./
RUN --mount=type=cache,target=/go/pkg/mod \
    go mod download
COPY . .
# A static binary (the SQLite driver is pure Go), without local paths or symbols.
RUN --mount=type=cache,target=/go/pkg/mod \
    --mount=type=cache,target=/root/.cache/go-build \
    CGO_ENABLED=0 GOFLAGS=-buildvcs=false \
    go build -trimpath -ldflags="-s -w" -o /out/vitola ./cmd/vitola

# ---- run ------------------------------------------------------------------
# debian-slim rather than distroless: the compose healthchecks need curl, and
# outbound HTTPS (image fetches, callbacks) needs the CA certificates.
FROM debian:trixie-slim
RUN apt-get update \
    && apt-get install -y --no-install-recommends ca-certificates curl \
    && rm -rf /var/lib/apt/lists/* \
    && groupadd --system --gid 10001 vitola \
    && useradd --system --uid 10001 --gid vitola --home-dir /var/lib/vitola --create-home --shell /usr/sbin/nologin vitola \
    && install -d -o vitola -g vitola /var/lib/vitola/data
COPY --from=build /out/vitola /usr/local/bin/vitola
# The embedded default keeps its SQLite files here (mount a volume to keep them);
# the scale-out shape uses DATABASE_URL instead. Listening on 0.0.0.0 is what a
# container needs; compose.yaml gives each component its own --addr anyway.
ENV VITOLA_DATA=/var/lib/vitola/data \
    VITOLA_ADDR=0.0.0.0:8080 \
    VITOLA_PAYMENTS_ADDR=0.0.0.0:8081 \
    VITOLA_LOG_FORMAT=json
WORKDIR /var/lib/vitola
USER 10001:10001
EXPOSE 8080 8081
ENTRYPOINT ["vitola"]
CMD ["serve"]
