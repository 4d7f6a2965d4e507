import { defineConfig } from 'vite';

// The console is served by the bridge at `{base_url}/console/` (docs/decisions/0281-console-app.md).
// `vite` (dev) proxies the session, GraphQL and REST routes to a platform on 127.0.0.1:8080.
const platform = 'http://127.0.0.1:8080';

export default defineConfig({
  base: '/console/',
  // Vite's own JSX transform (Oxc), React's automatic runtime: no React plugin needed.
  oxc: { jsx: { runtime: 'automatic' } },
  build: {
    outDir: '../dist/console',
    emptyOutDir: true,
    target: 'es2022',
    sourcemap: true,
    rolldownOptions: {
      // React Router's "use client" directives mean nothing in a browser bundle.
      onwarn(warning, warn) {
        if (warning.code === 'MODULE_LEVEL_DIRECTIVE') return;
        warn(warning);
      },
    },
  },
  server: {
    proxy: {
      '/console/api/graphql': { target: platform, ws: true },
      '/console/api': platform,
      '/api': platform,
    },
  },
});
