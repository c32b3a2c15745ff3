# syntax=docker/dockerfile:1
# Multi-stage: build a virtualenv with CPU-only torch, copy it into a slim runtime image
# that runs as a non-root user.

FROM python:3.11-slim AS build
ENV PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1
RUN python -m venv /opt/venv
ENV PATH=/opt/venv/bin:$PATH
# The CPU wheel first, from PyTorch's CPU index: the default index's build pulls CUDA packages.
RUN pip install --index-url https://download.pytorch.org/whl/cpu torch==2.13.0
WORKDIR /src
COPY pyproject.toml README.md ./
COPY encoder ./encoder
COPY connections ./connections
COPY store ./store
COPY service ./service
# The client's package (its own distribution too): the service's response models are its.
COPY client/cheapqa_client ./client/cheapqa_client
# The `cheapqa` command lives in cli/; its bench and loadtest commands need bench/.
COPY bench ./bench
COPY cli ./cli
# torch==2.13.0 is already satisfied by the CPU build, so this adds only the other dependencies.
RUN pip install .

FROM python:3.11-slim AS runtime
RUN useradd --create-home --uid 10001 cheapqa && mkdir /data && chown cheapqa /data
COPY --from=build /opt/venv /opt/venv
ENV PATH=/opt/venv/bin:$PATH \
    PYTHONUNBUFFERED=1 \
    CHEAPQA_HOST=0.0.0.0 \
    CHEAPQA_PORT=8000 \
    CHEAPQA_DATA_DIR=/data
# Bound to 0.0.0.0 `cheapqa serve` refuses to start without API keys: run the image with
# CHEAPQA_API_KEYS='["<key>"]', or CHEAPQA_ALLOW_OPEN_BIND=true where something in front
# authenticates (docker-compose.yml publishes the port on the host's loopback only).
USER cheapqa
WORKDIR /home/cheapqa
EXPOSE 8000
HEALTHCHECK --interval=10s --timeout=3s --start-period=30s --retries=3 \
    CMD python -c "import urllib.request; urllib.request.urlopen('http://127.0.0.1:8000/healthz', timeout=2)"
CMD ["cheapqa", "serve"]
