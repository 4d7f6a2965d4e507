import { agentBodies, NODE_AGENT_PATH } from '../../dataplane/agent/wire';
import {
  binary,
  type ByteRoute,
  byteOperation,
  errors,
  header,
  json,
  type Json,
  jsonSchemaOf,
  pathParam,
  STANDARD_SUCCESS,
} from '../../core/rest-byte-route';

/**
 * The publisher's routes outside the rows: the node agent's protocol (./node-agent-api.ts;
 * docs/decisions/0170-node-agent.md), authenticated by the node's token in `X-Node-Token`, scoped to
 * that node's own work.
 */
export const publisherByteRoutes: ByteRoute[] = nodeAgentByteRoutes();

/**
 * The calls of a node agent (`nodes agent`): heartbeat, claim, lease release, progress, result,
 * desired sites, and beyond its tasks (decision 0365) sites' extras, a held release task's run,
 * bundle and whether it is still wanted, and what its release host observed; a held data step's
 * recovery-point parts, down and up (decision 0375), resumed after a break (decision 0390). Each body is
 * documented from the schema the agent API parses it with (`agentBodies` of
 * dataplane/agent/wire.ts), so the two cannot disagree (decision 0295).
 */
export function nodeAgentByteRoutes(): ByteRoute[] {
  const descriptions = {
    session: 'The agent process that holds its claims.',
    wait_ms: 'How long to wait for a task (a long poll).',
    site_ids: 'Sites placed on this node (at most 200); one that is not refuses the whole call (404).',
    site_events:
      "The sleeps and wakes of the agent's own data plane not yet taken (at most 500, oldest first); those of sites placed on the node appear in the activity feeds (decision 0350).",
    site_processes:
      "The process of every site the agent's plane runs (at most 500), replacing its last report; a site's metadata shows it from the node it is placed on (decision 0385). Absent: the node reports none.",
  };
  const answer = (description: string): Json => ({
    '200': { description, content: json(STANDARD_SUCCESS) },
    ...errors([400, 401, 409, 413, 415, 429]),
  });
  const body = (call: keyof typeof agentBodies): Json => ({
    required: true,
    content: json(jsonSchemaOf(agentBodies[call], descriptions)),
  });
  const taskId = pathParam('taskId');
  const releaseId = pathParam('releaseId');
  const sha256 = pathParam('sha256', { type: 'string', pattern: '^[0-9a-f]{64}$' });
  const route = (method: 'GET' | 'POST', p: string, id: string, summary: string, rest: Json): ByteRoute => ({
    method,
    path: `${NODE_AGENT_PATH}${p}`,
    envelope: 'standard',
    operation: byteOperation(`publisher.nodeAgent.${id}`, 'publisher', summary, 'node', rest as never),
  });
  return [
    route('POST', '/heartbeat', 'heartbeat', 'A node agent is alive (every 5 s); answers the node and its status', {
      requestBody: body('heartbeat'),
      responses: answer(
        'the node, its status, the heartbeat period and, for the hosted node, whether this session holds its lease',
      ),
    }),
    route('POST', '/tasks/claim', 'claim', "Claims this node's oldest open task (null when none)", {
      requestBody: body('claim'),
      responses: answer('`task` or null'),
    }),
    route(
      'POST',
      '/lease/release',
      'releaseLease',
      "A stopping agent gives up the hosted node's lease (a no-op for other nodes)",
      {
        requestBody: body('release'),
        responses: answer('released'),
      },
    ),
    route('POST', '/tasks/{taskId}/progress', 'progress', "Records a claimed task's progress (the step's detail)", {
      parameters: [taskId],
      requestBody: body('progress'),
      responses: answer('recorded'),
    }),
    route('POST', '/tasks/{taskId}/result', 'result', "A claimed task's outcome; a task this agent no longer holds is 409", {
      parameters: [taskId],
      requestBody: body('result'),
      responses: answer('recorded'),
    }),
    route('GET', '/sites', 'sites', 'The sites placed on this node and the state each should be in', {
      responses: answer('`sites`'),
    }),
    route('POST', '/sites/extras', 'siteExtras', "What sites' processes start with beyond their spec (secrets included)", {
      requestBody: body('siteExtras'),
      responses: { ...answer('`extras`: per site, `config` and `database` (none for a customer node)'), ...errors([404]) },
    }),
    ...(
      [
        ['', 'releaseRun', "How a held release task's release runs (its environment, secrets included)", '`run`, `sha256`'],
        [
          '/wanted',
          'releaseWanted',
          'Whether the platform still wants the release where the reconcile task named it',
          '`wanted`',
        ],
      ] as const
    ).map(([tail, id, summary, what]) =>
      route('GET', `/tasks/{taskId}/releases/{releaseId}${tail}`, id, summary, {
        parameters: [taskId, releaseId],
        responses: { ...answer(what), ...errors([404, 503]) },
      }),
    ),
    route('POST', '/releases/observations', 'releaseObservations', "What the hosted node's release host observed", {
      requestBody: body('releaseObservations'),
      responses: {
        ...answer('recorded (requests served: storefront analytics; releases past the degraded rule)'),
        ...errors([403, 503]),
      },
    }),
    route('GET', '/tasks/{taskId}/releases/{releaseId}/bundle', 'releaseBundle', "A held release task's bundle (a tar archive)", {
      parameters: [taskId, releaseId],
      responses: {
        '200': { description: 'the bytes of the artifact', content: { 'application/x-tar': { schema: binary } } },
        ...errors([401, 404, 429, 503]),
      },
    }),
    route(
      'GET',
      '/tasks/{taskId}/parts/{sha256}',
      'partBytes',
      "A recovery point's part that a held data step names (a restore's), or one range of it",
      {
        parameters: [
          taskId,
          sha256,
          header('range', false, { type: 'string' }, 'One byte range (`bytes=<first>-[<last>]`): a broken download resumes.'),
        ],
        responses: {
          '200': { description: "the part's bytes", content: { 'application/octet-stream': { schema: binary } } },
          '206': {
            description: 'the bytes of the range asked for (`Content-Range: bytes a-b/size`)',
            content: { 'application/octet-stream': { schema: binary } },
          },
          ...errors([401, 404, 416, 429, 503]),
        },
      },
    ),
    route(
      'GET',
      '/tasks/{taskId}/parts/{sha256}/upload',
      'partUploadHeld',
      "How much of a held capture's part the platform holds (where a broken upload resumes)",
      {
        parameters: [taskId, sha256],
        responses: {
          ...answer('`sha256`, `offset` (the bytes held), `length` (the whole part; null: none held)'),
          ...errors([404, 503]),
        },
      },
    ),
    route('POST', '/tasks/{taskId}/parts/{sha256}', 'partUpload', "A held capture's part, kept when its bytes hash to `sha256`", {
      parameters: [
        taskId,
        sha256,
        header(
          'content-length',
          true,
          { type: 'integer', minimum: 0 },
          "The bytes sent: the part's size (at most 8 GiB), or its rest from `upload-offset`.",
        ),
        header(
          'upload-offset',
          false,
          { type: 'integer', minimum: 0 },
          'Where the bytes sent start in the part (default 0): what the platform holds.',
        ),
        header(
          'upload-length',
          false,
          { type: 'integer', minimum: 0 },
          "The whole part's size (default `content-length`; at most 8 GiB).",
        ),
      ],
      requestBody: { required: true, content: { 'application/octet-stream': { schema: binary } } },
      responses: {
        ...answer(
          '`sha256`, `size_bytes`: the part as the recovery store keeps it; 409 `upload_offset_mismatch`: the platform holds another offset',
        ),
        ...errors([404, 422, 503]),
      },
    }),
  ];
}
