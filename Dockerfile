# hypd: one image for the web server, the worker and the MCP server (compose.yaml picks the
# command). The product runs from its checkout (static/ and skills/ are found beside app/).
FROM python:3.11-slim-bookworm

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1

RUN groupadd --system hypd && useradd --system --gid hypd --home-dir /var/lib/hypd \
        --create-home hypd

WORKDIR /opt/hypd
COPY pyproject.toml README.md ./
COPY app app
COPY schemas schemas
COPY tasks tasks
COPY cloud cloud
COPY mcp_server mcp_server
COPY sandbox sandbox
COPY static static
COPY skills skills
RUN pip install -e .

USER hypd
ENV HYPD_DATA_DIR=/var/lib/hypd \
    HYPD_HOST=0.0.0.0 \
    HYPD_PORT=3099
EXPOSE 3099 3098
HEALTHCHECK --interval=15s --timeout=3s --retries=5 \
    CMD python -c "import urllib.request; urllib.request.urlopen('http://127.0.0.1:3099/healthz', timeout=2)" || exit 1
CMD ["hypd", "web"]
