// The deployment files checked as text, fast and without an engine; `npm run test:container`
// (test/container) builds the image and runs it.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { parse } from 'yaml';

const root = path.resolve(__dirname, '../..');

test('docker-compose.yml parses and names MongoDB, Kafka, the schema registry and the service, with health checks', () => {
  const compose = parse(readFileSync(path.join(root, 'docker-compose.yml'), 'utf8'));
  expect(Object.keys(compose.services).sort()).toEqual(['kafka', 'mongo', 'registry', 'service']);
  expect(compose.services.mongo.image).toMatch(/^mongo:7/);
  expect(compose.services.kafka.image).toMatch(/^apache\/kafka:3\.9/);
  // The version the local stack builds and the tests run against.
  expect(compose.services.registry.image).toBe('apicurio/apicurio-registry-mem:2.4.2.Final');
  for (const s of ['mongo', 'kafka', 'registry', 'service']) expect(compose.services[s].healthcheck).toBeDefined();
  expect(compose.services.service.depends_on).toEqual({
    mongo: { condition: 'service_healthy' },
    kafka: { condition: 'service_healthy' },
    registry: { condition: 'service_healthy' },
  });
  expect(compose.services.service.environment.SCHEMA_REGISTRY_URL).toBe('http://registry:8080/apis/ccompat/v7');
});

test('the Dockerfile is multi-stage, installs production dependencies only, runs as non-root with a health check', () => {
  const text = readFileSync(path.join(root, 'Dockerfile'), 'utf8');
  expect(text.match(/^FROM /gm)?.length).toBeGreaterThanOrEqual(2);
  expect(text).toMatch(/npm ci --omit=dev/);
  expect(text).toMatch(/^USER (?!root)\w+/m);
  expect(text).toMatch(/^HEALTHCHECK .*\n?.*\/healthz/m);
});

test('both stages build on NODE_IMAGE, the official Node.js 20 image unless a build names another', () => {
  const text = readFileSync(path.join(root, 'Dockerfile'), 'utf8');
  const beforeFirstFrom = text.slice(0, text.search(/^FROM /m));
  expect(beforeFirstFrom).toMatch(/^ARG NODE_IMAGE=node:20-bookworm-slim$/m);
  const base = '$' + '{NODE_IMAGE}'; // Docker's syntax, not a template literal
  expect(text.match(/^FROM .*/gm)).toEqual([`FROM ${base} AS build`, `FROM ${base}`]);
});
