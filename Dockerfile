# The Airflow image of the docker-compose stack: Airflow 3.3 with this project installed.
FROM apache/airflow:3.3.2-python3.11

USER airflow
COPY --chown=airflow:root pyproject.toml README.md constraints.txt /opt/sitemap-ops/
COPY --chown=airflow:root sitemap_ops /opt/sitemap-ops/sitemap_ops
# Airflow is in the image already; the extras add S3 (s3fs) and the DuckDB PostgreSQL extension, and the
# Celery provider serves the compose stack's workers. constraints.txt holds the versions the tests ran with
# (its apache-airflow pin is the image's).
RUN pip install --no-cache-dir -c /opt/sitemap-ops/constraints.txt "/opt/sitemap-ops[s3,postgres]" \
    "apache-airflow==3.3.2" "apache-airflow-providers-celery"
