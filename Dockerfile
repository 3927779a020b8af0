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
# `cag` on the PATH (`docker run IMAGE cag upgrade`, `docker exec ... cag import`), and an entrypoint
# that hands cag the arguments when the first is an option (`docker run IMAGE --help`). No arguments
# run CMD, the service; any other command (`node ...`, a chart's or compose's `command`) runs as given.
RUN printf '#!/bin/sh\nexec node /app/dist/src/cli/main.js "$@"\n' >/usr/local/bin/cag \
  && printf '#!/bin/sh\ncase "$1" in -*) set -- cag "$@" ;; esac\nexec "$@"\n' >/usr/local/bin/cag-entrypoint \
  && chmod 755 /usr/local/bin/cag /usr/local/bin/cag-entrypoint
USER node
EXPOSE 8000
# GET /healthz with bash's /dev/tcp: a second Node.js process every 10 s would cost far more CPU
# (it took 2.4 s, and once timed out, on a loaded 2-core machine).
HEALTHCHECK --interval=10s --timeout=3s --start-period=20s --retries=3 \
  CMD ["bash", "-c", "exec 3<>/dev/tcp/127.0.0.1/${PORT:-8000} && printf 'GET /healthz HTTP/1.0\\r\\n\\r\\n' >&3 && head -n 1 <&3 | grep -q ' 200 '"]
ENTRYPOINT ["cag-entrypoint"]
CMD ["node", "dist/src/main.js"]
