# hypd: one image for the web server, the worker and the MCP server (compose.yaml and
# deploy/cloudformation.yaml pick the command). The product runs from its checkout (static/
# and skills/ are found beside app/), installed in place.
#
# The base is pinned to a Python release; pin it to a digest as well for reproducible builds
# (docker buildx imagetools inspect python:3.11.13-slim-bookworm), see docs/deploy.md.
FROM python:3.11.13-slim-bookworm

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1

# A fixed uid: the CloudFormation instance and volumes own /var/lib/hypd by number.
RUN groupadd --system --gid 10001 hypd \
    && useradd --system --uid 10001 --gid hypd --home-dir /var/lib/hypd --no-create-home \
        --shell /usr/sbin/nologin hypd \
    && install -d -o hypd -g hypd -m 0700 /var/lib/hypd /var/lib/hypd/metrics

WORKDIR /opt/hypd
# Dependencies first (a layer that changes only with pyproject.toml): the packages are
# installed in place from empty stand-ins, then the code replaces them.
COPY pyproject.toml README.md ./
RUN for p in app schemas tasks cloud mcp_server sandbox launcher spaces_router vocabulary; do \
        mkdir "$p" && touch "$p/__init__.py"; done \
    && pip install --no-compile -e . \
    && rm -rf app schemas tasks cloud mcp_server sandbox launcher vocabulary
COPY app app
COPY vocabulary vocabulary
COPY schemas schemas
COPY tasks tasks
COPY cloud cloud
COPY mcp_server mcp_server
COPY sandbox sandbox
COPY launcher launcher
COPY spaces_router spaces_router
COPY static static
COPY skills skills

USER hypd
ENV HYPD_DATA_DIR=/var/lib/hypd \
    HYPD_HOST=0.0.0.0 \
    HYPD_PORT=3099
EXPOSE 3099 3098
HEALTHCHECK --interval=15s --timeout=3s --retries=5 \
    CMD ["python", "-c", "import urllib.request; urllib.request.urlopen('http://127.0.0.1:3099/healthz', timeout=2)"]
CMD ["hypd", "web"]
