import { projectRoot } from '../../core/paths';
import { checkImport, importsOf, violations } from './import-rules';

describe('import rules of the area kit', () => {
  it('hold for the whole repository', () => {
    expect(violations(projectRoot())).toEqual([]);
  });

  it('catch a kernel file importing an area, the bridge or the router', () => {
    expect(checkImport('core/x.ts', 'subgraphs/publisher/service')).toMatch(/kernel/);
    expect(checkImport('core/operations/x.ts', 'rest-bridge/server')).toMatch(/kernel/);
    expect(checkImport('core/x.ts', 'router/server')).toMatch(/kernel/);
    expect(checkImport('core/x.ts', 'core/errors')).toBeNull();
  });

  it('catch an area importing another area, or anything outside the kernel', () => {
    expect(checkImport('subgraphs/publisher/service.ts', 'subgraphs/identity/service')).toMatch(/another area/);
    expect(checkImport('subgraphs/publisher/service.ts', 'rest-bridge/envelopes')).toMatch(/only the kernel/);
    expect(checkImport('subgraphs/publisher/service.ts', 'subgraphs/publisher/model')).toBeNull();
    expect(checkImport('subgraphs/publisher/service.ts', 'core/errors')).toBeNull();
    // The registry is not an area: it lists them all.
    expect(checkImport('subgraphs/registry.ts', 'subgraphs/publisher/index')).toBeNull();
  });

  it('let areas import the data plane, and keep the data plane below every area', () => {
    expect(checkImport('subgraphs/publisher/executors.ts', 'dataplane/supervisor')).toBeNull();
    expect(checkImport('dataplane/runtimes/ghost.ts', 'dataplane/supervisor')).toBeNull();
    expect(checkImport('dataplane/edge.ts', 'core/errors')).toBeNull();
    expect(checkImport('dataplane/edge.ts', 'subgraphs/publisher/model')).toMatch(/data plane/);
    expect(checkImport('dataplane/edge.ts', 'rest-bridge/server')).toMatch(/data plane/);
    expect(checkImport('dataplane/edge.ts', 'router/server')).toMatch(/data plane/);
    expect(checkImport('dataplane/edge.ts', 'app/platform')).toMatch(/data plane/);
    // The kernel stays below the data plane.
    expect(checkImport('core/x.ts', 'dataplane/edge')).toMatch(/kernel/);
  });

  it('keep stand-ins out of the node agent, which its caller gives an executor', () => {
    expect(checkImport('dataplane/agent/agent.ts', 'dataplane/stand-in/simulated-executor')).toMatch(/no stand-in/);
    expect(checkImport('dataplane/agent/executors.ts', 'core/dns/stand-in-server')).toMatch(/no stand-in/);
    expect(checkImport('dataplane/agent/agent.ts', 'dataplane/agent/executors')).toBeNull();
    expect(checkImport('cli/nodes-agent.ts', 'dataplane/stand-in/simulated-executor')).toBeNull();
    expect(checkImport('dataplane/stand-in/simulated-executor.ts', 'dataplane/agent/executors')).toBeNull();
  });

  it('let areas import the nodes module, which sits on the data plane and below every area', () => {
    expect(checkImport('subgraphs/commerce/releases.ts', 'nodes/tasks')).toBeNull();
    expect(checkImport('nodes/hosted.ts', 'dataplane/agent/agent')).toBeNull();
    expect(checkImport('nodes/tasks.ts', 'core/mongo')).toBeNull();
    expect(checkImport('nodes/tasks.ts', 'subgraphs/publisher/model')).toMatch(/nodes module/);
    expect(checkImport('nodes/agent-api.ts', 'rest-bridge/server')).toMatch(/nodes module/);
    expect(checkImport('dataplane/agent/agent.ts', 'nodes/registry')).toMatch(/data plane/);
    expect(checkImport('core/x.ts', 'nodes/tasks')).toMatch(/kernel/);
  });

  it('leave the start of the hosted node’s agent to the composition root: no area imports nodes/hosted', () => {
    expect(checkImport('subgraphs/publisher/index.ts', 'nodes/hosted')).toMatch(/no area starts an agent/);
    expect(checkImport('subgraphs/commerce/releases.ts', 'nodes/hosted')).toMatch(/no area starts an agent/);
    expect(checkImport('subgraphs/registry.ts', 'nodes/hosted')).toMatch(/no area starts an agent/);
    expect(checkImport('subgraphs/publisher/area-services.ts', 'nodes/hosted-services')).toBeNull();
    expect(checkImport('app/platform.ts', 'nodes/hosted')).toBeNull();
  });

  it("catch the bridge importing an area's code (its limits.ts is the one allowed arrow)", () => {
    expect(checkImport('rest-bridge/server.ts', 'subgraphs/publisher/service')).toMatch(/bridge/);
    expect(checkImport('rest-bridge/server.ts', 'subgraphs/publisher/limits')).toBeNull();
  });

  it('keep the router and the bridge apart, with what both need in contract/ below them', () => {
    expect(checkImport('router/compose.ts', 'rest-bridge/openapi')).toMatch(/router never imports the bridge/);
    expect(checkImport('rest-bridge/executor.ts', 'router/server')).toMatch(/bridge never imports the router/);
    expect(checkImport('router/compose.ts', 'contract/openapi')).toBeNull();
    expect(checkImport('rest-bridge/server.ts', 'contract/graphql-executor')).toBeNull();
    expect(checkImport('contract/openapi.ts', 'core/rest-route')).toBeNull();
    expect(checkImport('contract/openapi.ts', 'rest-bridge/envelopes')).toMatch(/contract imports only/);
    expect(checkImport('contract/openapi.ts', 'router/server')).toMatch(/contract imports only/);
    expect(checkImport('contract/openapi.ts', 'subgraphs/publisher/limits')).toMatch(/contract imports only/);
    expect(checkImport('core/x.ts', 'contract/openapi')).toMatch(/kernel/);
    expect(checkImport('subgraphs/publisher/routes.ts', 'contract/openapi')).toMatch(/only the kernel/);
  });

  it('read static imports, re-exports, dynamic imports and requires', () => {
    const text = `import a from '../b';\nexport { c } from './c';\nconst d = await import('../../core/d');\nrequire('./e');\nimport x from 'zod';`;
    expect(importsOf('subgraphs/p/f.ts', text)).toEqual(['subgraphs/b', 'subgraphs/p/c', 'core/d', 'subgraphs/p/e']);
  });
});
