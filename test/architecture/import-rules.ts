import { readFileSync, readdirSync, statSync } from 'node:fs';
import path from 'node:path';

/**
 * The import rules of the area kit (docs/decisions/0006-area-shape.md):
 * - the kernel (`core/`) imports no area, nor the bridge, the router or the composition root;
 * - an area (`subgraphs/<area>/`) imports only the kernel and its own files;
 * - the bridge imports nothing under `subgraphs/` but an area's dependency-free `limits.ts`;
 * - the router and the bridge never import each other: what both need (the OpenAPI document, the
 *   executor port between them) lives in `contract/`, which imports only the kernel and its own
 *   files (docs/decisions/0192-contract-layer.md);
 * - the data plane (`dataplane/`: runtime cache, supervisor, edge; docs/decisions/0120-data-plane.md)
 *   sits below the areas beside the kernel: it imports only the kernel and its own files, and areas
 *   may import it;
 * - the nodes module (`nodes/`: the node registry, node tasks, the agent protocol's platform side
 *   and the hosted node; docs/decisions/0325-nodes-module.md) sits between the data plane and the
 *   areas, because more than one area sends work to machines: it imports only the kernel, the data
 *   plane (the agent's wire and code) and its own files, and areas may import it;
 * - the node agent (`dataplane/agent/`) knows only the executor interface: it imports no stand-in
 *   (a `stand-in` file or folder, such as dataplane/stand-in/simulated-executor.ts), which its
 *   caller passes in (docs/decisions/0380-hosted-agent-at-the-composition-root.md);
 * - no area starts an agent: nothing under `subgraphs/` imports `nodes/hosted` (the hosted node's
 *   agent, which reaches the whole data plane); the publishing area describes the hosted node through
 *   the `hostedNode` port and the composition root starts its agent (decision 0380).
 */
export interface Violation {
  file: string;
  imports: string;
  rule: string;
}

const SKIP = new Set(['node_modules', 'dist', '.data', '.git', 'coverage']);
const IMPORT =
  /(?:import|export)\s[^'"]*?from\s*['"]([^'"]+)['"]|import\(\s*['"]([^'"]+)['"]\s*\)|require\(\s*['"]([^'"]+)['"]\s*\)/g;

export function sourceFiles(root: string, dir = root): string[] {
  const out: string[] = [];
  for (const name of readdirSync(dir)) {
    if (SKIP.has(name)) continue;
    const full = path.join(dir, name);
    if (statSync(full).isDirectory()) out.push(...sourceFiles(root, full));
    else if (name.endsWith('.ts') && !name.endsWith('.d.ts')) out.push(path.relative(root, full).split(path.sep).join('/'));
  }
  return out;
}

/** The relative imports of a source text, resolved to repository paths (without extension). */
export function importsOf(file: string, text: string): string[] {
  const out: string[] = [];
  for (const m of text.matchAll(IMPORT)) {
    const spec = m[1] ?? m[2] ?? m[3];
    if (!spec.startsWith('.')) continue;
    out.push(path.posix.normalize(path.posix.join(path.posix.dirname(file), spec)));
  }
  return out;
}

const areaOf = (p: string): string | null => {
  const m = /^subgraphs\/([^/]+)\//.exec(p);
  return m ? m[1] : null;
};

export function checkImport(file: string, target: string): string | null {
  const top = (p: string) => p.split('/')[0];
  if (
    top(file) === 'core' &&
    ['subgraphs', 'rest-bridge', 'router', 'app', 'dataplane', 'nodes', 'contract'].includes(top(target))
  ) {
    return 'the kernel imports no area, data plane, nodes module, contract, bridge, router or composition root';
  }
  if (top(file) === 'contract' && !['core', 'contract'].includes(top(target))) {
    return 'the contract imports only the kernel and its own files';
  }
  if (top(file) === 'router' && top(target) === 'rest-bridge') {
    return 'the router never imports the bridge (what both need lives in contract/)';
  }
  if (top(file) === 'rest-bridge' && top(target) === 'router') {
    return 'the bridge never imports the router (what both need lives in contract/)';
  }
  if (top(file) === 'dataplane' && !['core', 'dataplane'].includes(top(target))) {
    return 'the data plane imports only the kernel and its own files';
  }
  if (file.startsWith('dataplane/agent/') && target.split('/').some((segment) => segment.startsWith('stand-in'))) {
    return 'the node agent imports no stand-in (its caller passes the executor in)';
  }
  if (top(file) === 'nodes' && !['core', 'dataplane', 'nodes'].includes(top(target))) {
    return 'the nodes module imports only the kernel, the data plane and its own files';
  }
  if (top(file) === 'subgraphs' && target === 'nodes/hosted') {
    return "no area starts an agent: the composition root starts the hosted node's (the area gives the hostedNode port)";
  }
  const area = areaOf(file);
  if (area) {
    const targetArea = areaOf(target);
    if (targetArea && targetArea !== area) return 'an area never imports another area (use a kernel port)';
    if (!targetArea && !['core', 'dataplane', 'nodes'].includes(top(target))) {
      return 'an area imports only the kernel, the data plane, the nodes module and its own files';
    }
  }
  if (top(file) === 'rest-bridge' && top(target) === 'subgraphs' && !/^subgraphs\/[^/]+\/limits$/.test(target)) {
    return "the bridge imports nothing under subgraphs/ but an area's limits.ts";
  }
  return null;
}

export function violations(root: string): Violation[] {
  const out: Violation[] = [];
  for (const file of sourceFiles(root)) {
    const text = readFileSync(path.join(root, file), 'utf8');
    for (const target of importsOf(file, text)) {
      const rule = checkImport(file, target);
      if (rule) out.push({ file, imports: target, rule });
    }
  }
  return out;
}

/**
 * The file-level import circles among `files` (repository paths with `.ts`): every strongly
 * connected component of more than one file in the graph of their relative imports (type-only
 * imports included: a circle of types still ties the files together), each sorted, listed in
 * order. Tarjan's algorithm; an import resolves to `x.ts` or `x/index.ts`. `read` gives a file's
 * text (the file system under `root` by default).
 */
export function importCircles(
  root: string,
  files: string[],
  read: (file: string) => string = (file) => readFileSync(path.join(root, file), 'utf8'),
): string[][] {
  const known = new Set(files);
  const edges = new Map<string, string[]>();
  for (const file of files) {
    const text = read(file);
    const targets = importsOf(file, text)
      .map((spec) => spec.replace(/\.js$/, ''))
      .map((spec) => [`${spec}.ts`, `${spec}/index.ts`].find((f) => known.has(f)))
      .filter((f): f is string => f !== undefined);
    edges.set(file, targets);
  }
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const circles: string[][] = [];
  const visit = (file: string) => {
    index.set(file, index.size);
    low.set(file, index.get(file)!);
    stack.push(file);
    onStack.add(file);
    for (const target of edges.get(file)!) {
      if (!index.has(target)) {
        visit(target);
        low.set(file, Math.min(low.get(file)!, low.get(target)!));
      } else if (onStack.has(target)) {
        low.set(file, Math.min(low.get(file)!, index.get(target)!));
      }
    }
    if (low.get(file) !== index.get(file)) return;
    const component: string[] = [];
    let top: string;
    do {
      top = stack.pop()!;
      onStack.delete(top);
      component.push(top);
    } while (top !== file);
    if (component.length > 1) circles.push(component.sort());
  };
  for (const file of [...files].sort()) if (!index.has(file)) visit(file);
  return circles.sort((a, b) => a[0].localeCompare(b[0]));
}
