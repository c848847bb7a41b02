"""Tests against real servers: PostgreSQL, MariaDB, S3 (moto server), GCS (emulator)."""
