import { useId, useState, type FormEvent } from 'react';
import { gql, useQuery } from 'urql';
import { Empty, ErrorMessage, Loading, StatusBadge, Time, useTitle, TableWrap } from '../components/common';

const AUDIT = gql<
  {
    mailAudit: {
      domain: string;
      checkedAt: string;
      records: { kind: string; name: string; status: string; observed: string[]; explanation: string }[];
      spf: { status: string; lookupCount: number; reasons: string[]; proposed: string | null };
      disclaimer: string;
    };
  },
  { domain: string; selectors: string | null }
>`
  query ConsoleMailAudit($domain: String!, $selectors: String) {
    mailAudit(domain: $domain, selectors: $selectors) {
      domain
      checkedAt
      records {
        kind
        name
        status
        observed
        explanation
      }
      spf {
        status
        lookupCount
        reasons
        proposed
      }
      disclaimer
    }
  }
`;

const EVENTS = gql<
  {
    mailEvents: {
      items: {
        id: string;
        type: string;
        resourceType: string;
        resourceId: string;
        messageId: string | null;
        createdAt: string;
      }[];
    };
  },
  Record<string, never>
>`
  query ConsoleMailEvents {
    mailEvents(limit: 30) {
      items {
        id
        type
        resourceType
        resourceId
        messageId
        createdAt
      }
      nextCursor
    }
  }
`;

export default function MailPage() {
  useTitle('Mail');
  const id = useId();
  const [domain, setDomain] = useState('');
  const [selectors, setSelectors] = useState('');
  const [asked, setAsked] = useState<{ domain: string; selectors: string | null } | null>(null);
  const [audit] = useQuery({ query: AUDIT, variables: asked ?? { domain: '', selectors: null }, pause: !asked });
  const [events] = useQuery({ query: EVENTS });

  const submit = (e: FormEvent) => {
    e.preventDefault();
    setAsked({ domain: domain.trim(), selectors: selectors.trim() || null });
  };

  const a = audit.data?.mailAudit;
  const items = events.data?.mailEvents.items ?? [];
  return (
    <>
      <h1>Mail</h1>
      <section aria-labelledby={`${id}-a`}>
        <h2 id={`${id}-a`}>Domain audit</h2>
        <p className="muted">Checks a domain’s SPF, DMARC, MX, DKIM and return-path records, and proposes a merged SPF record.</p>
        <form className="row wrap" onSubmit={submit}>
          <span className="stack tight">
            <label htmlFor={`${id}-d`}>Domain</label>
            <input
              id={`${id}-d`}
              type="text"
              required
              value={domain}
              onChange={(e) => setDomain(e.target.value)}
              placeholder="example.com"
            />
          </span>
          <span className="stack tight">
            <label htmlFor={`${id}-s`}>DKIM selectors (optional, comma-separated)</label>
            <input id={`${id}-s`} type="text" value={selectors} onChange={(e) => setSelectors(e.target.value)} />
          </span>
          <button type="submit" className="primary" disabled={audit.fetching}>
            Run audit
          </button>
        </form>
        {audit.fetching ? <Loading what="the audit" /> : null}
        <ErrorMessage error={audit.error} title="The audit failed" />
        {!asked ? <Empty>Enter a domain and choose Run audit to see its findings.</Empty> : null}
        {a && !audit.fetching ? (
          <>
            <p>
              <strong>{a.domain}</strong>, checked <Time iso={a.checkedAt} />.
            </p>
            <TableWrap label="Findings">
              <table>
                <caption>Findings</caption>
                <thead>
                  <tr>
                    <th scope="col">Record</th>
                    <th scope="col" className="wide">
                      Name
                    </th>
                    <th scope="col">Status</th>
                    <th scope="col" className="wide">
                      Found
                    </th>
                    <th scope="col">What it means</th>
                  </tr>
                </thead>
                <tbody>
                  {a.records.map((r) => (
                    <tr key={`${r.kind}${r.name}`}>
                      <th scope="row">{r.kind}</th>
                      <td className="break wide">{r.name}</td>
                      <td>
                        <StatusBadge status={r.status} />
                      </td>
                      <td className="break wide">{r.observed.length ? r.observed.map((o) => <code key={o}>{o}</code>) : '—'}</td>
                      <td className="break">{r.explanation}</td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </TableWrap>
            <h3>SPF</h3>
            <p>
              <StatusBadge status={a.spf.status} /> {a.spf.lookupCount} DNS lookups (10 at most).
            </p>
            {a.spf.reasons.length ? (
              <ul>
                {a.spf.reasons.map((r) => (
                  <li key={r}>{r}</li>
                ))}
              </ul>
            ) : null}
            {a.spf.proposed ? (
              <p>
                Proposed record: <code className="break">{a.spf.proposed}</code>
              </p>
            ) : null}
            <p className="muted small">{a.disclaimer}</p>
          </>
        ) : null}
      </section>
      <section aria-labelledby={`${id}-e`}>
        <h2 id={`${id}-e`}>Message events</h2>
        <ErrorMessage error={events.error} title="The events could not be read" />
        {events.fetching && !events.data ? <Loading what="events" /> : null}
        {events.data && items.length === 0 ? (
          <Empty>No message events yet. Events (accepted, delivered, bounced…) appear once the account sends mail.</Empty>
        ) : null}
        {items.length > 0 ? (
          <TableWrap label="Message events">
            <table>
              <caption className="sr-only">Message events</caption>
              <thead>
                <tr>
                  <th scope="col">When</th>
                  <th scope="col">Event</th>
                  <th scope="col">Message</th>
                  <th scope="col" className="wide">
                    Resource
                  </th>
                </tr>
              </thead>
              <tbody>
                {items.map((e) => (
                  <tr key={e.id}>
                    <th scope="row">
                      <Time iso={e.createdAt} />
                    </th>
                    <td>{e.type}</td>
                    <td className="break">{e.messageId ?? '—'}</td>
                    <td className="wide">
                      {e.resourceType} <code>{e.resourceId.slice(0, 12)}</code>
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          </TableWrap>
        ) : null}
      </section>
    </>
  );
}
