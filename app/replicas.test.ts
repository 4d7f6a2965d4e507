import { replicaHeapFlags } from './replicas';

describe('replicaHeapFlags', () => {
  it("passes the parent's young-generation size on to the replicas it spawns", () => {
    expect(replicaHeapFlags(['--max-semi-space-size=32', '--inspect'])).toEqual(['--max-semi-space-size=32']);
  });
  it('gives them the 64 MiB npm start and the image use when the parent was started without one', () => {
    expect(replicaHeapFlags([])).toEqual(['--max-semi-space-size=64']);
  });
});
