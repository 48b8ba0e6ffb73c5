# The API (`toolsmith serve`, with its admin console) or the sandbox service (`toolsmith sandbox`);
# see docker-compose.yml.

# The console's browser assets (htmx, the CodeMirror island, Swagger UI for /docs), bundled with
# esbuild from the committed lockfile, as `make install` does; only the bundle goes on.
FROM node:22-slim AS console-assets
WORKDIR /console
COPY console/package.json console/package-lock.json ./
RUN npm ci --no-audit --no-fund --loglevel=error
COPY console/build.mjs ./
COPY console/assets assets
# Each kind's own console behaviours (toolkinds/<kind>/assets/*.js), which build.mjs finds beside console/.
COPY toolkinds /toolkinds
RUN node build.mjs

FROM python:3.11-slim
WORKDIR /app
# libpq: psycopg's client library, for the PostgreSQL event store.
RUN apt-get update && apt-get install -y --no-install-recommends libpq5 && rm -rf /var/lib/apt/lists/*
COPY pyproject.toml README.md ./
COPY domain domain
COPY application application
COPY toolkinds toolkinds
COPY entrypoints entrypoints
COPY infrastructure infrastructure
COPY api api
COPY projections projections
COPY sandbox sandbox
# (.dockerignore keeps a local console/node_modules and console/static/dist out of the context)
COPY console console
COPY --from=console-assets /console/static/dist console/static/dist
RUN pip install --no-cache-dir . && test -s "$(python -c 'import console, pathlib; print(pathlib.Path(console.__file__).parent / "static/dist/console.js")')"
ENV TOOLSMITH_DATA_DIR=/data
VOLUME ["/data"]
EXPOSE 8000
CMD ["toolsmith", "serve", "--host", "0.0.0.0", "--port", "8000"]
