import { RUNTIME_CATALOG, defaultRuntime, findRuntime, isUpgradeEdge, upgradeTargets } from './runtime-catalog';

describe('runtime catalog', () => {
  it('has exactly one default, and unique versions', () => {
    expect(RUNTIME_CATALOG.filter((r) => r.isDefault)).toHaveLength(1);
    expect(new Set(RUNTIME_CATALOG.map((r) => r.version)).size).toBe(RUNTIME_CATALOG.length);
    expect(defaultRuntime().version).toBe('6.2.1');
  });

  it('only lists predecessors that are themselves in the catalog', () => {
    for (const r of RUNTIME_CATALOG) for (const p of r.upgradePredecessors) expect(findRuntime(p)).toBeDefined();
  });

  it.each([
    ['5.101.2', '5.105.0', true],
    ['5.101.2', '6.2.1', true],
    ['5.105.0', '6.2.1', true],
    ['6.2.1', '6.4.0', true],
    ['5.101.2', '6.4.0', false], // no skipping past a required step
    ['6.2.1', '5.105.0', false], // no downgrades
    ['6.2.1', '6.2.1', false], // not an upgrade
    ['6.2.1', '9.9.9', false], // unknown target
    ['1.0.0', '6.2.1', false], // unknown source
  ])('%s → %s is an edge: %s', (from, to, edge) => {
    expect(isUpgradeEdge(from, to)).toBe(edge);
  });

  it('lists the one-step targets of a version', () => {
    expect(upgradeTargets('5.101.2')).toEqual(['5.105.0', '6.2.1']);
    expect(upgradeTargets('6.4.0')).toEqual([]);
  });
});
