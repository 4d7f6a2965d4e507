# One image for every piece: `platform start all | router | bridge | subgraph NAME`.
FROM node:20-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --ignore-scripts --no-audit --no-fund
COPY . .
RUN npx tsc -p tsconfig.build.json \
 && npx vite build console --logLevel warn \
 && mkdir /ops && find core subgraphs -name '*.graphql' -print0 | tar --null -cf - -T - | tar -xf - -C /ops

FROM node:20-bookworm-slim
ENV NODE_ENV=production APOLLO_TELEMETRY_DISABLED=1 HOST=0.0.0.0
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --ignore-scripts --no-audit --no-fund
COPY --from=build /app/dist ./dist
COPY bin ./bin
COPY schema ./schema
# The GraphQL documents the bridge translates routes onto (read at runtime from the project root).
COPY --from=build /ops/ ./
USER node
ENTRYPOINT ["node", "--max-semi-space-size=64", "bin/platform.js"]
CMD ["start", "all"]
