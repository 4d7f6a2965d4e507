import type { FastifyInstance } from 'fastify';
import { badRequest } from '../../../core/errors';
import type { Migrations } from './migrations';
import { reportCsv, reportJson } from './report';
import { type Authenticate, sendError } from '../planes';

/**
 * `GET /api/v1/assets/migrations/{id}/report` on the bridge listener: a download, not an envelope.
 * `?format=csv|json` wins; otherwise `Accept: text/csv` gives CSV and anything else raw JSON.
 */
export async function migrationReportPlane(
  app: FastifyInstance,
  migrations: Migrations,
  authenticate: Authenticate,
): Promise<void> {
  app.get<{ Params: { id: string }; Querystring: { format?: string } }>(
    '/api/v1/assets/migrations/:id/report',
    async (req, reply) => {
      try {
        const principal = await authenticate(req);
        const format = req.query.format ?? (/\btext\/csv\b/i.test(req.headers.accept ?? '') ? 'csv' : 'json');
        if (format !== 'csv' && format !== 'json') throw badRequest('validation_failed', 'format must be csv or json');
        const report = await migrations.report(principal, req.params.id);
        reply.header('Cache-Control', 'no-store').header('Vary', 'Accept');
        if (format === 'csv') {
          return reply
            .status(200)
            .header('Content-Type', 'text/csv; charset=utf-8')
            .header('Content-Disposition', `attachment; filename="migration-${report.migration.id}.csv"`)
            .send(reportCsv(report));
        }
        return reply.status(200).header('Content-Type', 'application/json; charset=utf-8').send(reportJson(report));
      } catch (e) {
        return sendError(reply, e, req.log);
      }
    },
  );
}
