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
require('reflect-metadata');
require(entry).main(process.argv.slice(2));
