import { useEffect, useId } from 'react';
import { useSearchParams } from 'react-router-dom';
import { useQuery } from 'urql';
import { PROJECTS, type ProjectRow } from '../graphql';
import { ErrorMessage } from './common';

/**
 * The project a page shows, chosen from the account's projects and kept in the address (`?project=`),
 * so a page can be bookmarked and the back button works.
 */
export function useProjectChoice(prefer?: (p: ProjectRow) => boolean) {
  const [params, setParams] = useSearchParams();
  const [{ data, error, fetching }] = useQuery({ query: PROJECTS });
  const projects = data?.projects ?? [];
  const chosen = params.get('project') ?? '';
  const fallback = (prefer ? projects.find(prefer) : undefined) ?? projects[0];
  const projectId = chosen || fallback?.id || '';
  useEffect(() => {
    if (!chosen && fallback) setParams({ project: fallback.id }, { replace: true });
  }, [chosen, fallback, setParams]);
  const choose = (id: string) => setParams({ project: id });
  return { projects, projectId, choose, error, loaded: Boolean(data) || (!fetching && Boolean(error)) };
}

export function ProjectPicker({
  projects,
  projectId,
  choose,
  error,
}: {
  projects: ProjectRow[];
  projectId: string;
  choose: (id: string) => void;
  error: unknown;
}) {
  const id = useId();
  return (
    <div className="row wrap">
      <label htmlFor={id}>Project</label>
      <select id={id} value={projectId} onChange={(e) => choose(e.target.value)} disabled={projects.length === 0}>
        {projects.map((p) => (
          <option key={p.id} value={p.id}>
            {p.site?.name ?? p.name}
            {p.sourceType ? ` (${p.sourceType})` : ''}
          </option>
        ))}
      </select>
      <ErrorMessage error={error} title="The projects could not be read" />
    </div>
  );
}
