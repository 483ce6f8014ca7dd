# Multi-stage: native modules (better-sqlite3, msgpackr-extract) build in the first stage,
# the runtime stage carries only what runs, as a non-root user.
FROM node:20-bookworm-slim AS build
WORKDIR /app
RUN apt-get update && apt-get install -y --no-install-recommends python3 make g++ && rm -rf /var/lib/apt/lists/*
COPY package.json package-lock.json ./
COPY core/package.json core/package.json
COPY proxy/package.json proxy/package.json
COPY sdk/package.json sdk/package.json
COPY test/package.json test/package.json
RUN npm ci --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json ./
COPY core core
COPY proxy proxy
COPY sdk sdk
# Compiled once here; the compiler and the other dev tools stay out of the runtime stage.
RUN npm run build && npm prune --omit=dev

FROM node:20-bookworm-slim
ENV NODE_ENV=production VAULT_HOST=0.0.0.0 VAULT_DATA_DIR=/data SIDECAR_HOST=0.0.0.0
WORKDIR /app
COPY --from=build /app /app
RUN mkdir -p /data && chown node:node /data
USER node
VOLUME ["/data"]
EXPOSE 8083 8084
HEALTHCHECK --interval=10s --timeout=3s --retries=5 CMD node -e "fetch('http://127.0.0.1:'+(process.env.VAULT_PORT||8083)+'/readyz').then(r=>process.exit(r.ok?0:1),()=>process.exit(1))"
# The vault by default. The sidecar runs from the same image with
# `node --enable-source-maps dist/proxy/src/main.js` (as docker-compose.yml does), and the
# command line with `node core/bin/vault.mjs <verb>` (no pg_dump in it: see the README's Containers).
CMD ["node", "--enable-source-maps", "--max-semi-space-size=8", "dist/core/src/main.js"]
