# syntax=docker/dockerfile:1
# Build stage: install skillhive and its pinned dependencies into a virtualenv.
FROM python:3.11-slim AS build
WORKDIR /src
ENV PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1
COPY pyproject.toml constraints.txt README.md ./
COPY backend backend
COPY chat_shell chat_shell
RUN python -m venv /opt/venv \
    && /opt/venv/bin/pip install -c constraints.txt .

# Console stage: the web console's npm packages, installed from its lockfile (never committed).
# Only the browser bundles the gateway serves (`VENDOR` in backend/api/console.py) are kept.
FROM node:20-slim AS console
WORKDIR /console
COPY console/package.json console/package-lock.json ./
RUN npm ci --no-audit --no-fund --ignore-scripts \
    && mkdir /bundles \
    && for f in socket.io-client/dist/socket.io.esm.min.js dompurify/dist/purify.es.mjs \
                marked/lib/marked.esm.js mermaid/dist/mermaid.min.js \
                swagger-ui-dist/swagger-ui-bundle.js swagger-ui-dist/swagger-ui.css; do \
         mkdir -p "/bundles/$(dirname "$f")" && cp "node_modules/$f" "/bundles/$f"; \
       done \
    && rm -rf node_modules && mv /bundles node_modules
COPY console/index.html console/docs.html console/styles.css ./
COPY console/src src

# Runtime stage: the virtualenv, migrations and built-in skills; runs as a non-root user.
FROM python:3.11-slim AS runtime
# bubblewrap: the sandbox for skill scripts (docker-compose.sandbox.yml says what it needs);
# libseccomp2: its syscall filter (chat_shell/sandbox/_seccomp.py).
RUN apt-get update && apt-get install -y --no-install-recommends bubblewrap libseccomp2 \
    && rm -rf /var/lib/apt/lists/*
RUN useradd --create-home --uid 10001 skillhive
COPY --from=build /opt/venv /opt/venv
WORKDIR /app
COPY alembic.ini ./
COPY migrations migrations
COPY skills skills
COPY --from=console /console console
RUN mkdir -p /app/data && chown skillhive:skillhive /app/data
ENV PATH=/opt/venv/bin:$PATH \
    PYTHONUNBUFFERED=1 \
    SKILLHIVE_HOST=0.0.0.0 \
    SKILLHIVE_DATA_DIR=/app/data
USER skillhive
EXPOSE 8000
HEALTHCHECK --interval=15s --timeout=5s --start-period=20s --retries=3 \
    CMD ["python", "-c", "import sys, urllib.request; sys.exit(urllib.request.urlopen('http://127.0.0.1:8000/readyz', timeout=4).status != 200)"]
ENTRYPOINT ["skillhive"]
CMD ["serve"]
