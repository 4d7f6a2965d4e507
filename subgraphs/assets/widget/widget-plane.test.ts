import { normOrigin, originAllowed } from './widget-plane';

describe('widget origins', () => {
  it('matches scheme://host[:port] exactly, case-insensitively, ignoring a trailing slash', () => {
    const bucket = { allowedOrigins: ['https://App.example.com/', 'http://localhost:3000'] };
    expect(originAllowed(bucket, 'https://app.example.com')).toBe(true);
    expect(originAllowed(bucket, 'http://localhost:3000')).toBe(true);
    expect(originAllowed(bucket, 'http://app.example.com')).toBe(false);
    expect(originAllowed(bucket, 'https://app.example.com.evil.net')).toBe(false);
    expect(originAllowed(bucket, 'http://localhost:3001')).toBe(false);
    expect(originAllowed({ allowedOrigins: [] }, 'https://app.example.com')).toBe(false);
    expect(originAllowed({ allowedOrigins: ['*'] }, 'https://anything.example')).toBe(true);
    expect(normOrigin(' HTTPS://A.example/ ')).toBe('https://a.example');
  });
});
