import { readFileSync } from 'node:fs';
import path from 'node:path';
import { deploymentFiles } from '../../app/deployment';
import { type AnyArea, areas } from '../../app/areas';
import { projectRoot } from '../../core/paths';

/**
 * docker-compose.yml and infra/observability/prometheus.yml are generated from the area registry
 * (app/deployment.ts, decision 0193): the committed files are what `npm run compose` writes, and a
 * new registry line is enough to deploy and scrape a new area.
 */
describe('deployment files from the registry', () => {
  it('are up to date (run `npm run compose` and commit when this fails)', async () => {
    const files = await deploymentFiles();
    expect(Object.keys(files).sort()).toEqual(['docker-compose.yml', 'infra/observability/prometheus.yml']);
    for (const [name, content] of Object.entries(files)) {
      expect({ name, content: readFileSync(path.join(projectRoot(), name), 'utf8') }).toEqual({ name, content });
    }
  });

  it('give a new area its container, subgraph URL, router dependency and scrape target', async () => {
    const extra = { ...areas()[0], name: 'newarea', portOffset: 8, http: undefined } as AnyArea;
    const files = await deploymentFiles([...areas(), extra]);
    const compose = files['docker-compose.yml'];
    expect(compose).toContain('    SUBGRAPH_URL_NEWAREA: http://newarea:4109/graphql\n');
    expect(compose).toContain("  newarea:\n    <<: *platform\n    command: ['start', 'subgraph', 'newarea']\n");
    expect(compose).toContain('      newarea: { condition: service_started }\n');
    expect(files['infra/observability/prometheus.yml']).toContain(
      "      - targets: ['newarea:4109']\n        labels: { area: newarea }\n",
    );
    // The CDN listener's port is published by the one area that serves it.
    expect(compose.match(/127\.0\.0\.1:8081:8081/g)).toHaveLength(1);
  });
});
