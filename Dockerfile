# syntax=docker/dockerfile:1
# pvx operator image: build with the full toolchain, run on distroless Node 24 as nonroot with
# production dependencies only. Nothing is written at run time, so the root filesystem can be
# read-only (the Deployment sets readOnlyRootFilesystem: true).
#
# Base images are pinned by digest: a tag can be moved to other content, a digest cannot, and a
# digest that no longer resolves fails the build instead of quietly building on something else.
# To move to newer bases, replace both digests (docker buildx imagetools inspect IMAGE:TAG prints
# the index digest) and rebuild. The digests below: node:24-bookworm-slim as Docker's official
# images recorded it (docker-library/repo-info, Node.js 24.19.0); distroless nodejs24-debian12
# nonroot as public Dockerfiles pin it (Google publishes no record to check it against offline).
#
# npm ci runs with --ignore-scripts: no dependency pvx builds with or ships needs an install
# script (the only one in the lockfile is esbuild's, and the build uses esbuild without it: its
# binary comes in its platform package), and a compromised package
# then cannot run code at build time.

FROM node:24-bookworm-slim@sha256:a9f5f7c91a432850b2a8a7797adf5eadb6c733ceed61167806cee7ea7fbc29df AS build
WORKDIR /src
COPY package.json package-lock.json ./
RUN npm ci --ignore-scripts --no-audit --no-fund
COPY tsconfig.json ./
COPY scripts/build.ts ./scripts/
COPY src ./src
RUN npm run build

FROM node:24-bookworm-slim@sha256:a9f5f7c91a432850b2a8a7797adf5eadb6c733ceed61167806cee7ea7fbc29df AS prod-deps
WORKDIR /src
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --ignore-scripts --no-audit --no-fund

FROM gcr.io/distroless/nodejs24-debian12:nonroot@sha256:14d42e2511532589a7c7e01a753667a74fcc96266e137e8125006b87b0c32d0a
WORKDIR /app
COPY --from=prod-deps /src/node_modules ./node_modules
COPY --from=build /src/dist ./dist
COPY config/crd ./config/crd
COPY package.json ./
USER nonroot
# /metrics over HTTPS (token-reviewed), and /healthz, /readyz over HTTP for the probes.
EXPOSE 8443 8081
# --optimize-for-size: V8 favours memory over speed. Its young generation stays small, so the burst
# of garbage from listing every claim at start does not leave ~70 MiB of pages resident for minutes
# (10,000 claims: 92 MiB instead of 169 MiB 10 s after ready; idle 76 instead of 81 MiB; an audit
# pass ~15 % slower) — see bench/README.md.
ENTRYPOINT ["/nodejs/bin/node", "--optimize-for-size", "dist/cli/main.js"]
CMD ["run"]
