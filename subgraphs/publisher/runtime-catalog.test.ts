import { RUNTIME_CATALOG, defaultRuntime, findRuntime, isUpgradeEdge, upgradeTargets } from './runtime-catalog';

describe('runtime catalog', () => {
  it('has exactly one default, and unique versions', () => {
    expect(RUNTIME_CATALOG.filter((r) => r.isDefault)).toHaveLength(1);
    expect(new Set(RUNTIME_CATALOG.map((r) => r.version)).size).toBe(RUNTIME_CATALOG.length);
    expect(defaultRuntime().version).toBe('5.130.5');
  });

  it('only lists predecessors that are themselves in the catalog', () => {
    for (const r of RUNTIME_CATALOG) for (const p of r.upgradePredecessors) expect(findRuntime(p)).toBeDefined();
  });

  it.each([
    ['5.120.3', '5.126.0', true],
    ['5.120.3', '5.130.5', true],
    ['5.126.0', '5.130.5', true],
    ['5.130.5', '5.130.6', true],
    ['5.120.3', '5.130.6', false], // no skipping past a required step
    ['5.130.5', '5.126.0', false], // no downgrades
    ['5.130.5', '5.130.5', false], // not an upgrade
    ['5.130.5', '9.9.9', false], // unknown target
    ['1.0.0', '5.130.5', false], // unknown source
  ])('%s → %s is an edge: %s', (from, to, edge) => {
    expect(isUpgradeEdge(from, to)).toBe(edge);
  });

  it('lists the one-step targets of a version', () => {
    expect(upgradeTargets('5.120.3')).toEqual(['5.126.0', '5.130.5']);
    expect(upgradeTargets('5.130.6')).toEqual([]);
  });
});
