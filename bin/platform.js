#!/usr/bin/env node
// The `platform` CLI. Runs the compiled TypeScript in dist/ (built by `npm install` via `prepare`).
'use strict';
const path = require('node:path');
const fs = require('node:fs');
const entry = path.join(__dirname, '..', 'dist', 'cli', 'main.js');
if (!fs.existsSync(entry)) {
  console.error('platform: the project is not built yet; run `npm install` (or `npm run build`) first.');
  process.exit(1);
}
const args = process.argv.slice(2);
// The node agent runs on the customer's machine and loads only its own modules (cli/nodes-agent.ts).
if (args[0] === 'nodes' && args[1] === 'agent') {
  require(path.join(__dirname, '..', 'dist', 'cli', 'nodes-agent.js')).main(args.slice(2));
} else {
  require('reflect-metadata');
  require(entry).main(args);
}
