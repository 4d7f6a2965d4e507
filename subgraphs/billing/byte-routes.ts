import {
  binary,
  type ByteRoute,
  byteOperation,
  errors,
  json,
  pathParam,
  STANDARD_SUCCESS,
  STANDARD_WEBHOOK_HEADERS,
} from '../../core/rest-byte-route';
import { WEBHOOK_PATH } from './webhooks';

/** The billing route outside the rows: the payment provider's signed webhooks (./webhooks.ts). */
export const billingByteRoutes: ByteRoute[] = [
  {
    method: 'POST',
    path: `${WEBHOOK_PATH}/{provider}`,
    envelope: 'standard',
    operation: byteOperation(
      'billing.payment-webhook',
      'billing',
      'Payment provider webhooks (Standard Webhooks, PAYMENT_WEBHOOK_SECRET)',
      'none',
      {
        description:
          'Verified over the raw body before it is parsed; a verified payment credits the checkout once, however often it is delivered. A bad signature is a 400 `invalid_signature`.',
        parameters: [pathParam('provider'), ...STANDARD_WEBHOOK_HEADERS],
        requestBody: { required: true, content: { '*/*': { schema: binary } } },
        responses: {
          '200': { description: 'handled', content: json(STANDARD_SUCCESS) },
          ...errors([400, 404, 409, 413, 429, 503]),
        },
      },
    ),
  },
];
