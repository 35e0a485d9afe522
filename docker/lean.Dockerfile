# syntax=docker/dockerfile:1
# Lean service image: elan + the pinned toolchain + the REPL + Mathlib (with its cache) and
# `sorryless lean-server`. One Lean version pinned once (toolchain, REPL tag and Mathlib tag equal).
#   docker build -f docker/lean.Dockerfile --build-arg LEAN_VERSION=v4.24.0 -t sorryless-lean .
# Expect 7-10 GB. The Lean environment is installed by `sorryless setup-lean` itself (the same
# code path as on a developer machine), into /opt/sorryless/lean, in ONE layer that also deletes
# the download caches; the runtime stage copies it once (never `mv` .lake across layers).

ARG LEAN_VERSION=v4.24.0

# ---- stage 1: build the Lean environment ---------------------------------------------------------
FROM python:3.11-slim-bookworm AS lean-build
ARG LEAN_VERSION
RUN apt-get update \
 && apt-get install -y --no-install-recommends git ca-certificates curl \
 && rm -rf /var/lib/apt/lists/*
ENV ELAN_HOME=/opt/elan \
    PATH=/opt/elan/bin:$PATH \
    SORRYLESS_DATA_DIR=/opt/sorryless \
    SORRYLESS_LEAN_TOOLCHAIN=leanprover/lean4:${LEAN_VERSION} \
    SORRYLESS_MATHLIB_REV=${LEAN_VERSION} \
    SORRYLESS_REPL_REV=${LEAN_VERSION}
WORKDIR /src
COPY pyproject.toml README.md ./
COPY sorryless ./sorryless
COPY api ./api
COPY lean_server ./lean_server
COPY prover ./prover
RUN pip install --no-cache-dir . \
 && curl -sSfL https://raw.githubusercontent.com/leanprover/elan/master/elan-init.sh -o /tmp/elan-init.sh \
 && sh /tmp/elan-init.sh -y --no-modify-path --default-toolchain none \
 && rm /tmp/elan-init.sh \
 && sorryless setup-lean \
 && rm -rf /root/.cache/mathlib /root/.cache/lake /opt/elan/downloads \
 && cp /opt/sorryless/lean/sorryless-lean.lock.json /opt/sorryless/version.json

# ---- stage 2: runtime ----------------------------------------------------------------------------
FROM python:3.11-slim-bookworm
ARG LEAN_VERSION
RUN apt-get update \
 && apt-get install -y --no-install-recommends git ca-certificates \
 && rm -rf /var/lib/apt/lists/* \
 && useradd --create-home --uid 10001 --shell /usr/sbin/nologin sorryless
ENV PYTHONUNBUFFERED=1 \
    ELAN_HOME=/opt/elan \
    PATH=/opt/elan/bin:$PATH \
    SORRYLESS_DATA_DIR=/opt/sorryless \
    SORRYLESS_LEAN_TOOLCHAIN=leanprover/lean4:${LEAN_VERSION} \
    SORRYLESS_MATHLIB_REV=${LEAN_VERSION} \
    SORRYLESS_REPL_REV=${LEAN_VERSION} \
    SORRYLESS_LEAN_SERVER_HOST=0.0.0.0 \
    SORRYLESS_LOG_JSON=true
COPY --from=lean-build --chown=sorryless:sorryless /opt/elan /opt/elan
COPY --from=lean-build --chown=sorryless:sorryless /opt/sorryless /opt/sorryless
COPY --from=lean-build /usr/local/lib/python3.11/site-packages /usr/local/lib/python3.11/site-packages
COPY --from=lean-build /usr/local/bin/sorryless /usr/local/bin/sorryless
USER sorryless
WORKDIR /opt/sorryless
EXPOSE 8100
HEALTHCHECK --interval=15s --timeout=5s --start-period=300s --retries=5 \
  CMD python -c "import urllib.request; urllib.request.urlopen('http://127.0.0.1:8100/health', timeout=5)" || exit 1
CMD ["sorryless", "lean-server", "--host", "0.0.0.0", "--port", "8100"]
