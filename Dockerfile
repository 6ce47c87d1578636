# The coordinator as a container: Kafka protocol on 9092, Prometheus metrics on 9404.
FROM python:3.11-slim

WORKDIR /app
COPY pyproject.toml README.md ./
COPY protocol ./protocol
COPY storage ./storage
COPY assignors ./assignors
COPY coordinator ./coordinator
COPY metrics ./metrics
RUN pip install --no-cache-dir .

VOLUME /data
EXPOSE 9092 9404
# Clients outside the compose network reach it as localhost:9092 (ADVERTISED to override).
ENV ADVERTISED=PLAINTEXT://localhost:9092
# Clients that push their metrics (KIP-714) are asked for the consumer's (the dashboard's
# client row) every 10 s; empty TELEMETRY_METRICS to ask for none.
ENV TELEMETRY_METRICS=org.apache.kafka.consumer.coordinator.,org.apache.kafka.consumer.fetch.manager.,org.apache.kafka.consumer.poll.
CMD ["sh", "-c", "exec python -m coordinator serve \
  --override listeners=PLAINTEXT://0.0.0.0:9092 \
  --override advertised.listeners=${ADVERTISED} \
  --override metrics.listener=http://0.0.0.0:9404 \
  --override telemetry.default.metrics=${TELEMETRY_METRICS} \
  --override telemetry.default.interval.ms=10000 \
  --override log.dirs=/data"]
