# syntax=docker/dockerfile:1
# The service image (docs/guides/production.md): a build stage compiles TypeScript to dist/ and prunes
# node_modules to production dependencies; the final stage holds only dist/, package.json, the
# lock file and those dependencies, runs as the unprivileged `node` user, and starts
# `node dist/main.js` directly (no npm, no shell), so SIGTERM from `docker stop` reaches the
# process, which drains (http.shutdown_grace_ms) and exits. Run it with an init (`--init`, or
# `init: true` in compose.yaml) to reap children. scripts/check-runtime.sh checks the same tree in
# CI without a registry.
#
#   docker build -t creator-backend .
#   docker run --rm --env-file prod.env creator-backend dist/migrate.js     # migrations as a step
#   docker run --init -p 8080:8080 -v data:/data --env-file prod.env creator-backend

ARG NODE_IMAGE=node:20-slim

FROM ${NODE_IMAGE} AS build
WORKDIR /src
COPY package.json package-lock.json ./
RUN npm ci --ignore-scripts --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json ./
COPY scripts/build.mjs scripts/build.mjs
COPY generated generated
COPY spec/published spec/published
COPY src src
RUN npm run build \
 && npm prune --omit=dev --ignore-scripts --no-audit --no-fund \
 && npm cache clean --force

FROM ${NODE_IMAGE}
ENV NODE_ENV=production \
    SVC_ENV=production \
    SVC_HOST=0.0.0.0 \
    PORT=8080 \
    SVC_DATA_DIR=/data
WORKDIR /app
COPY --from=build /src/package.json /src/package-lock.json ./
COPY --from=build /src/node_modules ./node_modules
COPY --from=build /src/dist ./dist
# The embedded store's directory (PGlite, uploaded sounds, the development key file) when no
# DATABASE_URL is given; owned by the runtime user.
RUN mkdir -p /data && chown node:node /data
VOLUME ["/data"]
USER node
EXPOSE 8080
# Readiness, not liveness alone: a node whose stores are down or whose keys cannot open stored
# values is reported unhealthy.
HEALTHCHECK --interval=10s --timeout=3s --start-period=60s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:' + (process.env.PORT || 8080) + '/v1/health/ready').then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
ENTRYPOINT ["node", "--max-old-space-size=256", "--max-semi-space-size=32", "--no-warnings"]
CMD ["dist/main.js"]
