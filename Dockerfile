# uniapd in a container (deploy/README.md).
#
#   docker build -t uniapd .
#   docker run -d --name uniapd -p 8080:8080 -v uniap-data:/var/lib/uniap --stop-timeout 60 uniapd
#   docker exec uniapd uniapd tenant add alice      # prints the API key as its last line
#
# Keys are required: --no-auth only accepts a loopback --listen, and the
# container listens on 0.0.0.0 so that the published port reaches it.

# The package lists under deps/ are one package a line, its first word; the
# rest of the line and #-comments are notes (scripts/install-deps.sh reads
# them the same way).
# ---- build: the packages of deps/debian-build.txt, then make
FROM debian:12-slim AS build
ENV DEBIAN_FRONTEND=noninteractive
COPY deps/debian-build.txt /tmp/debian-build.txt
RUN apt-get update \
 && sed 's/#.*//' /tmp/debian-build.txt | awk 'NF { print $1 }' | xargs apt-get install -y --no-install-recommends \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY . .
# what /metrics' uniapd_build_info reports (.git is not in the build context):
#   docker build --build-arg VERSION="$(git describe --tags --always --dirty)" \
#                --build-arg GIT_COMMIT="$(git rev-parse HEAD)" -t uniapd .
ARG VERSION=unknown
ARG GIT_COMMIT=unknown
RUN make -j"$(nproc)" VERSION="$VERSION" GIT_COMMIT="$GIT_COMMIT" all

# ---- runtime: the packages of deps/debian-runtime.txt (the shared libraries
# uniapd and uniap link, curl for the health check, sqlite3 for backups;
# tests/cli/deps.sh checks the list against the built programs)
FROM debian:12-slim
ENV DEBIAN_FRONTEND=noninteractive
COPY deps/debian-runtime.txt /tmp/debian-runtime.txt
RUN apt-get update \
 && sed 's/#.*//' /tmp/debian-runtime.txt | awk 'NF { print $1 }' | xargs apt-get install -y --no-install-recommends \
 && rm -rf /var/lib/apt/lists/* /tmp/debian-runtime.txt \
 && useradd --system --user-group --uid 10001 --home-dir /var/lib/uniap --shell /usr/sbin/nologin uniap \
 && mkdir -p /var/lib/uniap \
 && chown uniap:uniap /var/lib/uniap && chmod 0750 /var/lib/uniap
COPY --from=build /src/build/uniapd /src/build/uniap /usr/local/bin/
WORKDIR /var/lib/uniap
# `uniapd tenant ...` inside the container finds the same database without --db
ENV UNIAPD_DB=/var/lib/uniap/uniap.db
USER uniap
VOLUME /var/lib/uniap
EXPOSE 8080
# SIGTERM: uniapd stops accepting, gives the requests in flight up to 10 s, then
# running plan jobs up to 30 s (--grace) before re-queueing them; run with
# --stop-timeout 60 (docker's default of 10 s would SIGKILL it mid-way)
STOPSIGNAL SIGTERM
HEALTHCHECK --interval=30s --timeout=3s --start-period=10s --retries=3 \
  CMD curl -fsS -o /dev/null http://127.0.0.1:8080/healthz || exit 1
ENTRYPOINT ["/usr/local/bin/uniapd"]
CMD ["--listen", "0.0.0.0:8080", "--db", "/var/lib/uniap/uniap.db"]
