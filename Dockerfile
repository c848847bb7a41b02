# The Airflow image of the docker-compose stack: Airflow 3.3 with this project installed.
FROM apache/airflow:3.3.2-python3.11

USER airflow
COPY --chown=airflow:root pyproject.toml README.md /opt/sitemap-ops/
COPY --chown=airflow:root sitemap_ops /opt/sitemap-ops/sitemap_ops
# Airflow is in the image already; the extras add S3 (s3fs) and the DuckDB PostgreSQL extension, and the
# Celery provider serves the compose stack's celery profile.
RUN pip install --no-cache-dir "/opt/sitemap-ops[s3,postgres]" "apache-airflow==3.3.2" \
    "apache-airflow-providers-celery"
