# The API (`toolsmith serve`) or the sandbox service (`toolsmith sandbox`); see docker-compose.yml.
FROM python:3.11-slim
WORKDIR /app
# libpq: psycopg's client library, for the PostgreSQL event store.
RUN apt-get update && apt-get install -y --no-install-recommends libpq5 && rm -rf /var/lib/apt/lists/*
COPY pyproject.toml README.md ./
COPY domain domain
COPY application application
COPY entrypoints entrypoints
COPY infrastructure infrastructure
COPY api api
COPY projections projections
COPY sandbox sandbox
RUN pip install --no-cache-dir .
ENV TOOLSMITH_DATA_DIR=/data
VOLUME ["/data"]
EXPOSE 8000
CMD ["toolsmith", "serve", "--host", "0.0.0.0", "--port", "8000"]
