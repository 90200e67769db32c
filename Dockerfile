# The image the manifests in deploy/ run: ghcr.io/tessera/tessera:0.1.0 (the project version
# in CMakeLists.txt; tests/k8s/deploy_manifests_test.cc checks that every Tessera image in
# deploy/ is this tag). Build it from the repository root with
#
#   docker build -t ghcr.io/tessera/tessera:0.1.0 .
#
# Two stages on Debian 12: the build stage installs what scripts/deps.sh installs (the same
# script the build machines run, as root here, so without sudo) and builds only the `tessera`
# binary; the runtime stage has only the shared libraries that binary links (ldd: fmt, spdlog,
# yaml-cpp, hiredis, cpp-httplib with brotli, OpenSSL; libstdc++ and libc are in the base)
# and CA certificates, and runs as the numeric non-root user 65532 that the manifests'
# runAsUser names. NVML is not in the image: the NVIDIA container runtime mounts the host's
# libnvidia-ml.so.1 into the agent's container.

FROM debian:12-slim AS build
COPY scripts/deps.sh /src/scripts/deps.sh
RUN /src/scripts/deps.sh && rm -rf /var/lib/apt/lists/*
COPY . /src
RUN cmake -S /src -B /build -G Ninja -DCMAKE_BUILD_TYPE=Release \
      -DTESSERA_TESTS=OFF -DTESSERA_BENCH=OFF \
 && cmake --build /build --target tessera \
 && strip /build/tessera

FROM debian:12-slim
RUN apt-get update -qq \
 && apt-get install -y -qq --no-install-recommends \
      ca-certificates libbrotli1 libcpp-httplib0.11 libfmt9 libhiredis0.14 libspdlog1.10 \
      libssl3 libyaml-cpp0.7 \
 && rm -rf /var/lib/apt/lists/* \
 && groupadd --system --gid 65532 tessera \
 && useradd --system --uid 65532 --gid 65532 --no-create-home --home-dir /nonexistent \
      --shell /usr/sbin/nologin tessera
COPY --from=build /build/tessera /usr/local/bin/tessera
LABEL org.opencontainers.image.title="tessera" \
      org.opencontainers.image.version="0.1.0"
USER 65532:65532
ENTRYPOINT ["/usr/local/bin/tessera"]
