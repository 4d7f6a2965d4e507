import {
  binary,
  type ByteRoute,
  byteOperation,
  COMMERCE_ERROR,
  COMMERCE_SUCCESS,
  errors,
  json,
  pathParam,
  STANDARD_WEBHOOK_HEADERS,
} from '../../core/rest-byte-route';
import { COMMERCE_PREFIX } from './limits';
import { WEBHOOK_RECEIVER_PATH } from './service';

/** The commerce routes outside the rows: release artifact uploads and the platform's signed webhooks. */
export const commerceByteRoutes: ByteRoute[] = [
  // Release artifacts (./index.ts, docs/decisions/0130-commerce-runtime.md).
  {
    method: 'PUT',
    path: `${COMMERCE_PREFIX}/artifacts`,
    envelope: 'commerce',
    operation: byteOperation(
      'commerce.upload-artifact',
      'commerce',
      'Upload a bundle (a tar archive) as a content-addressed release artifact',
      'bearer',
      {
        description:
          "The body is the tar archive of a storefront bundle (`index.js` or `dist/server/index.js`) or an app bundle (`server.mjs`), at most 64 MiB (413 `COMMERCE_PAYLOAD_TOO_LARGE`; a larger `Content-Length` is refused before the body is read); links, absolute paths and `..` are refused (422). The body is streamed to disk while it is hashed. The answer, `data { artifact, bytes, stored: true }`, names its SHA-256, which `POST …/commerce/releases` takes; it is the same whether or not the bytes were stored before. The artifact is held by the key's account: only that account may release it (another account's hash answers 404 as an unknown one). The account's holds count against its plan's artifact quota (413 `COMMERCE_ARTIFACT_QUOTA_EXCEEDED`; uploading what it already holds is free). Key, scope and project are checked before the body is read.",
        parameters: [pathParam('projectID', { type: 'string', format: 'uuid' })],
        requestBody: { required: true, content: { 'application/x-tar': { schema: binary }, '*/*': { schema: binary } } },
        responses: {
          '201': {
            description: 'held by the account (the same answer whether or not the bytes were stored before)',
            content: json(COMMERCE_SUCCESS),
          },
          ...errors([401, 402, 403, 404, 413, 422, 429], COMMERCE_ERROR),
          ...errors([503]),
        },
      },
    ),
  },
  // The commerce platform's signed inbound webhooks.
  {
    method: 'POST',
    path: WEBHOOK_RECEIVER_PATH,
    envelope: 'commerce',
    operation: byteOperation(
      'commerce.webhook-receiver',
      'commerce',
      "Commerce platform webhooks (Standard Webhooks, the platform app's secret)",
      'none',
      {
        description:
          'Verified over the raw body before it is parsed; one observation per connection of the store, once per `webhook-id`.',
        parameters: STANDARD_WEBHOOK_HEADERS,
        requestBody: { required: true, content: { '*/*': { schema: binary } } },
        responses: {
          '200': { description: 'recorded (or a duplicate)', content: json(COMMERCE_SUCCESS) },
          ...errors([401, 413, 422, 429], COMMERCE_ERROR),
          ...errors([503]),
        },
      },
    ),
  },
];
