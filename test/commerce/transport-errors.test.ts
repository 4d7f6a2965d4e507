import { areaError, COMMERCE_TRANSPORT_ERRORS } from '../../rest-bridge/envelopes';
import { COMMERCE_CODES } from '../../subgraphs/commerce/errors';

describe('the bridge’s commerce codes', () => {
  it('are commerce codes with the status the area gives them', () => {
    for (const { code, status } of Object.values(COMMERCE_TRANSPORT_ERRORS)) {
      expect([code, COMMERCE_CODES[code as keyof typeof COMMERCE_CODES]]).toEqual([code, status]);
    }
  });

  it('rewrite every non-commerce code on a commerce route, keep commerce codes and other areas as they are', () => {
    const e = (code: string) => ({ code, message: 'm', details: { a: 1 } });
    expect(areaError('commerce', 400, e('invalid_json'))).toEqual({
      status: 422,
      error: { code: 'COMMERCE_INVALID_CONFIGURATION', message: 'm', details: { a: 1 } },
    });
    expect(areaError('commerce', 503, e('engine_unavailable')).error.code).toBe('COMMERCE_UNAVAILABLE');
    expect(areaError('commerce', 500, e('internal_error')).error.code).toBe('COMMERCE_OPERATION_FAILED');
    expect(areaError('commerce', 418, e('teapot'))).toEqual({ status: 418, error: { ...e('COMMERCE_INVALID_CONFIGURATION') } });
    expect(areaError('commerce', 409, e('COMMERCE_FAILED_HEALTH_GATE')).error.code).toBe('COMMERCE_FAILED_HEALTH_GATE');
    expect(areaError('standard', 400, e('invalid_json'))).toEqual({ status: 400, error: e('invalid_json') });
  });
});
