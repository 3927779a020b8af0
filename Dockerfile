# syntax=docker/dockerfile:1
# The Node.js 20 base of both stages. Its default is the official image; the container test
# (scripts/container-test.sh) passes a local one, since no image registry is reachable there.
ARG NODE_IMAGE=node:20-bookworm-slim

# Build stage: compile TypeScript with the dev dependencies.
FROM ${NODE_IMAGE} AS build
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json ./
COPY src ./src
COPY consumers ./consumers
# The admin console's builder: tsc compiles src/console/app into dist/console, copied below with dist.
COPY scripts/build-console.cjs ./scripts/
RUN npm run build

# Runtime stage: production dependencies and the compiled JavaScript only, as a non-root user.
FROM ${NODE_IMAGE}
ENV NODE_ENV=production PORT=8000
WORKDIR /app
COPY package.json package-lock.json ./
# npm leaves the scope folders of the packages it omitted behind, empty: removed.
RUN npm ci --omit=dev --no-audit --no-fund && npm cache clean --force \
  && find node_modules -mindepth 1 -maxdepth 1 -type d -empty -delete
COPY --from=build /app/dist ./dist
USER node
EXPOSE 8000
HEALTHCHECK --interval=10s --timeout=3s --start-period=20s --retries=3 \
  CMD node -e "fetch('http://127.0.0.1:'+(process.env.PORT||8000)+'/healthz').then(r=>process.exit(r.ok?0:1),()=>process.exit(1))"
CMD ["node", "dist/src/main.js"]
