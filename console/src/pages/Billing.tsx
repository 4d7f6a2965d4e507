import { gql, useQuery } from 'urql';
import { BarChart } from '../components/Chart';
import { Empty, ErrorMessage, Loading, Time, useTitle, TableWrap } from '../components/common';

const BILLING = gql<
  {
    aiCreditBalance: {
      plan: string;
      available: number;
      allocation: number;
      usedThisPeriod: number;
      byokUsedThisPeriod: number;
      topUps: number;
      carriedOver: number;
      periodStart: string;
      periodEnd: string;
    };
    aiCreditUsage: {
      items: {
        id: string;
        kind: string;
        product: string | null;
        credits: number;
        source: string;
        description: string | null;
        createdAt: string;
      }[];
    };
  },
  Record<string, never>
>`
  query ConsoleBilling {
    aiCreditBalance {
      plan
      available
      allocation
      usedThisPeriod
      byokUsedThisPeriod
      topUps
      carriedOver
      periodStart
      periodEnd
    }
    aiCreditUsage(limit: 100) {
      items {
        id
        kind
        product
        credits
        source
        description
        createdAt
      }
      nextCursor
    }
  }
`;

/** Credits used per day over the last 14 days, from the usage entries. */
function perDay(items: { credits: number; createdAt: string; kind: string }[]) {
  const days: { label: string; value: number }[] = [];
  const index = new Map<string, number>();
  const today = new Date();
  for (let i = 13; i >= 0; i--) {
    const d = new Date(today.getFullYear(), today.getMonth(), today.getDate() - i);
    const key = d.toDateString();
    index.set(key, days.length);
    days.push({ label: d.toLocaleDateString(undefined, { month: 'short', day: 'numeric' }), value: 0 });
  }
  for (const e of items) {
    const at = index.get(new Date(e.createdAt).toDateString());
    if (at !== undefined && e.kind !== 'top_up' && e.kind !== 'allocation') days[at].value += Math.abs(e.credits);
  }
  return days;
}

export default function BillingPage() {
  useTitle('Billing');
  const [{ data, error, fetching }] = useQuery({ query: BILLING });
  const b = data?.aiCreditBalance;
  const usage = data?.aiCreditUsage.items ?? [];
  return (
    <>
      <h1>Billing</h1>
      <ErrorMessage error={error} title="The AI-credit balance could not be read" />
      {fetching && !data ? <Loading what="the balance" /> : null}
      {b ? (
        <section aria-labelledby="bal-h">
          <h2 id="bal-h">AI credits</h2>
          <p className="big">
            <strong>{b.available.toLocaleString()}</strong> credits available
          </p>
          <dl className="facts">
            <dt>Plan</dt>
            <dd>{b.plan}</dd>
            <dt>This month’s allocation</dt>
            <dd>{b.allocation.toLocaleString()}</dd>
            <dt>Used this month</dt>
            <dd>{b.usedThisPeriod.toLocaleString()}</dd>
            <dt>Own-key usage (not drawn)</dt>
            <dd>{b.byokUsedThisPeriod.toLocaleString()}</dd>
            <dt>Top-ups this month</dt>
            <dd>{b.topUps.toLocaleString()}</dd>
            <dt>Carried over</dt>
            <dd>{b.carriedOver.toLocaleString()}</dd>
            <dt>Period</dt>
            <dd>
              <Time iso={b.periodStart} /> to <Time iso={b.periodEnd} />
            </dd>
          </dl>
        </section>
      ) : null}
      {data ? (
        <section aria-labelledby="use-h">
          <h2 id="use-h">Usage</h2>
          {usage.length === 0 ? (
            <Empty>
              No AI-credit usage yet. Credits are drawn when Assets AI actions run (analysis, smart crop, generations); buy more
              with a top-up through <code>POST /api/v1/billing/ai-credits/top-ups/quote</code>.
            </Empty>
          ) : (
            <>
              <BarChart title="Credits used per day, last 14 days" unit="credits" bars={perDay(usage)} />
              <TableWrap label="Usage entries">
                <table>
                  <caption className="sr-only">Usage entries</caption>
                  <thead>
                    <tr>
                      <th scope="col">When</th>
                      <th scope="col">Kind</th>
                      <th scope="col" className="wide">
                        Product
                      </th>
                      <th scope="col">Credits</th>
                      <th scope="col" className="wide">
                        Source
                      </th>
                    </tr>
                  </thead>
                  <tbody>
                    {usage.map((u) => (
                      <tr key={u.id}>
                        <th scope="row">
                          <Time iso={u.createdAt} />
                        </th>
                        <td>{u.kind}</td>
                        <td className="wide">{u.product ?? '—'}</td>
                        <td>{u.credits}</td>
                        <td className="wide">{u.source}</td>
                      </tr>
                    ))}
                  </tbody>
                </table>
              </TableWrap>
            </>
          )}
        </section>
      ) : null}
    </>
  );
}
