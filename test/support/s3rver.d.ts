/** Minimal typings of s3rver (a local S3-compatible server used by tests; it ships none). */
declare module 's3rver' {
  interface S3rverOptions {
    port?: number;
    address?: string;
    directory: string;
    silent?: boolean;
  }
  export default class S3rver {
    constructor(opts: S3rverOptions);
    run(): Promise<{ address: string; port: number }>;
    close(): Promise<void>;
  }
}
