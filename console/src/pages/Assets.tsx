import { useCallback, useEffect, useId, useRef, useState, type DragEvent, type FormEvent } from 'react';
import { gql, useMutation, useQuery } from 'urql';
import { api } from '../api';
import { uploadAsset } from '../upload';
import { Empty, ErrorMessage, Loading, StatusBadge, formatBytes, useInterval, useTitle } from '../components/common';

interface Asset {
  id: string;
  key: string;
  folder: string;
  visibility: string;
  mimeType: string;
  type: string;
  size: number;
  status: string;
  url: string | null;
  updatedAt: string;
  originalName: string;
  cacheControl: string;
  revision: number;
}

const ASSETS = gql<
  { assets: { assets: Asset[]; total: number; nextCursor: string } },
  { prefix: string | null; cursor: string | null }
>`
  query ConsoleAssets($prefix: String, $cursor: String) {
    assets(limit: 48, cursor: $cursor, sort: "created_at", direction: "desc", filter: { prefix: $prefix }) {
      assets {
        id
        key
        folder
        visibility
        mimeType
        type
        size
        status
        url
        updatedAt
        originalName
        cacheControl
        revision
      }
      total
      nextCursor
    }
  }
`;

const SIGNED_URL = gql<{ createAssetSignedUrl: { url: string; expiresAt: string } }, { id: string; expiresIn: number }>`
  mutation ConsoleAssetSignedUrl($id: ID!, $expiresIn: Int!) {
    createAssetSignedUrl(id: $id, expiresIn: $expiresIn) {
      url
      expiresAt
    }
  }
`;

interface Upload {
  id: number;
  name: string;
  loaded: number;
  total: number;
  state: 'uploading' | 'done' | 'failed';
  error?: unknown;
}

export default function AssetsPage() {
  useTitle('Assets');
  const id = useId();
  const [prefixInput, setPrefixInput] = useState('');
  const [prefix, setPrefix] = useState<string | null>(null);
  const [cursors, setCursors] = useState<string[]>([]);
  const cursor = cursors.length ? cursors[cursors.length - 1] : null;
  const [{ data, fetching, error }, reexecute] = useQuery({ query: ASSETS, variables: { prefix, cursor } });
  const refresh = useCallback(() => reexecute({ requestPolicy: 'network-only' }), [reexecute]);
  const assets = data?.assets.assets ?? [];
  const processing = assets.some((a) => a.status === 'processing' || a.status === 'pending');
  useInterval(refresh, 1000, processing);

  const [folder, setFolder] = useState('');
  const [visibility, setVisibility] = useState('');
  const [uploads, setUploads] = useState<Upload[]>([]);
  const [dragging, setDragging] = useState(false);
  const fileInput = useRef<HTMLInputElement>(null);
  const seq = useRef(0);
  const aborts = useRef(new Map<number, AbortController>());

  const upload = useCallback(
    (files: FileList | File[]) => {
      for (const file of Array.from(files)) {
        const uid = ++seq.current;
        const started: Upload = { id: uid, name: file.name, loaded: 0, total: file.size, state: 'uploading' };
        setUploads((u) => [started, ...u].slice(0, 20));
        const patch = (p: Partial<Upload>) => setUploads((u) => u.map((x) => (x.id === uid ? { ...x, ...p } : x)));
        const ctl = new AbortController();
        aborts.current.set(uid, ctl);
        const dir = folder.trim().replace(/^\/+|\/+$/g, '');
        uploadAsset(file, {
          folder: dir || undefined,
          visibility: visibility || undefined,
          signal: ctl.signal,
          onProgress: ({ loaded, total }) => patch({ loaded, total: total || file.size }),
        })
          .then(
            () => {
              patch({ state: 'done', loaded: file.size });
              refresh();
            },
            (e: unknown) => patch({ state: 'failed', error: e }),
          )
          .finally(() => aborts.current.delete(uid));
      }
    },
    [folder, visibility, refresh],
  );

  const onDrop = (e: DragEvent) => {
    e.preventDefault();
    setDragging(false);
    if (e.dataTransfer.files.length) upload(e.dataTransfer.files);
  };

  const search = (e: FormEvent) => {
    e.preventDefault();
    setCursors([]);
    setPrefix(prefixInput.trim() || null);
  };

  return (
    <>
      <h1>Assets</h1>
      <section aria-labelledby={`${id}-up`}>
        <h2 id={`${id}-up`}>Upload files</h2>
        <div
          className={`drop${dragging ? ' over' : ''}`}
          onDragOver={(e) => {
            e.preventDefault();
            setDragging(true);
          }}
          onDragLeave={() => setDragging(false)}
          onDrop={onDrop}
        >
          <div className="row wrap">
            <span className="stack tight">
              <label htmlFor={`${id}-file`}>Upload</label>
              <input
                ref={fileInput}
                id={`${id}-file`}
                type="file"
                multiple
                aria-describedby={`${id}-drop`}
                onChange={(e) => {
                  if (e.target.files?.length) upload(e.target.files);
                  e.target.value = '';
                }}
              />
            </span>
            <span className="stack tight">
              <label htmlFor={`${id}-folder`}>Folder (optional)</label>
              <input
                id={`${id}-folder`}
                type="text"
                value={folder}
                onChange={(e) => setFolder(e.target.value)}
                placeholder="images/2026"
              />
            </span>
            <span className="stack tight">
              <label htmlFor={`${id}-vis`}>Visibility</label>
              <select id={`${id}-vis`} value={visibility} onChange={(e) => setVisibility(e.target.value)}>
                <option value="">The bucket’s default</option>
                <option value="public">Public</option>
                <option value="private">Private</option>
              </select>
            </span>
          </div>
          <p id={`${id}-drop`} className="muted small">
            Choose files, or drop them here. Each file uploads as soon as it is chosen; large files go in parts, each retried on
            its own.
          </p>
        </div>
        {uploads.length > 0 ? (
          <ul className="uploads">
            {uploads.map((u) => (
              <li key={u.id}>
                <span className="name">{u.name}</span>{' '}
                {u.state === 'uploading' ? (
                  <>
                    <progress value={u.loaded} max={u.total || 1} aria-label={`Uploading ${u.name}`} />{' '}
                    <span className="muted small">{u.total ? Math.floor((u.loaded / u.total) * 100) : 0}%</span>{' '}
                    <button
                      type="button"
                      className="small"
                      aria-label={`Cancel the upload of ${u.name}`}
                      onClick={() => aborts.current.get(u.id)?.abort()}
                    >
                      Cancel
                    </button>
                  </>
                ) : u.state === 'done' ? (
                  <span className="badge ok">Uploaded</span>
                ) : (
                  <ErrorMessage error={u.error} title="Upload failed" />
                )}
              </li>
            ))}
          </ul>
        ) : null}
      </section>

      <section aria-labelledby={`${id}-list`}>
        <h2 id={`${id}-list`}>Files</h2>
        <form className="row wrap" onSubmit={search} role="search">
          <label htmlFor={`${id}-prefix`}>Folder or key prefix</label>
          <input id={`${id}-prefix`} type="search" value={prefixInput} onChange={(e) => setPrefixInput(e.target.value)} />
          <button type="submit">Show</button>
        </form>
        <ErrorMessage error={error} title="The assets could not be read" />
        {fetching && !data ? <Loading what="assets" /> : null}
        {data ? (
          <p className="muted small">
            {data.assets.total} asset{data.assets.total === 1 ? '' : 's'}
            {prefix ? ` under “${prefix}”` : ''}
          </p>
        ) : null}
        {data && assets.length === 0 ? (
          <Empty>
            {prefix ? 'Nothing under this prefix. ' : 'No assets yet. '}
            Choose files with <strong>Upload</strong> above, or drop them on it.
          </Empty>
        ) : null}
        <ul className="grid">
          {assets.map((a) => (
            <AssetCard key={a.id} asset={a} onSaved={refresh} />
          ))}
        </ul>
        <div className="row">
          {cursors.length > 0 ? (
            <button type="button" onClick={() => setCursors((c) => c.slice(0, -1))}>
              Previous page
            </button>
          ) : null}
          {data?.assets.nextCursor ? (
            <button type="button" onClick={() => setCursors((c) => [...c, data.assets.nextCursor])}>
              Next page
            </button>
          ) : null}
        </div>
      </section>
    </>
  );
}

function AssetCard({ asset, onSaved }: { asset: Asset; onSaved: () => void }) {
  const isImage = asset.mimeType.startsWith('image/') || asset.type === 'image';
  const [signed, sign] = useMutation(SIGNED_URL);
  const [link, setLink] = useState<string | null>(null);
  const needsSigned = isImage && !asset.url && asset.status === 'ready';
  const [src, setSrc] = useState<string | null>(asset.url);

  useEffect(() => {
    if (asset.url) {
      setSrc(asset.url);
      return;
    }
    if (!needsSigned) return;
    let live = true;
    // A private image is shown through a signed address on the CDN, valid for an hour.
    void sign({ id: asset.id, expiresIn: 3600 }).then((r) => {
      if (live && r.data) setSrc(r.data.createAssetSignedUrl.url);
    });
    return () => {
      live = false;
    };
  }, [asset.id, asset.url, needsSigned, sign]);

  return (
    <li className="card">
      <div className="thumb">
        {isImage && src ? (
          <img src={src} alt={asset.key} loading="lazy" decoding="async" />
        ) : (
          <span className="kind" aria-hidden="true">
            {(asset.mimeType.split('/')[1] ?? asset.type).slice(0, 8)}
          </span>
        )}
      </div>
      <p className="key break">{asset.key}</p>
      <p className="muted small">
        {formatBytes(asset.size)} · {asset.visibility} · <StatusBadge status={asset.status} />
      </p>
      {asset.status === 'ready' ? (
        <div className="stack tight">
          <button
            type="button"
            className="small"
            aria-label={`Signed link for ${asset.key}`}
            onClick={() => {
              void sign({ id: asset.id, expiresIn: 3600 }).then((r) => {
                if (r.data) setLink(r.data.createAssetSignedUrl.url);
              });
            }}
          >
            Signed link
          </button>
          {link ? (
            <input
              type="text"
              readOnly
              value={link}
              aria-label={`Signed link for ${asset.key}, valid for an hour`}
              onFocus={(e) => e.target.select()}
            />
          ) : null}
        </div>
      ) : null}
      <ErrorMessage error={signed.error} />
      <AssetEdit asset={asset} onSaved={onSaved} />
    </li>
  );
}

/**
 * The asset's details, saved with `PATCH /api/v1/assets/{id}` (original name, cache control,
 * visibility; only the changed ones are sent), conditional on the revision shown (`If-Match`): a
 * stale one answers 412 and the message says so.
 */
function AssetEdit({ asset, onSaved }: { asset: Asset; onSaved: () => void }) {
  const id = useId();
  const [originalName, setOriginalName] = useState(asset.originalName);
  const [cacheControl, setCacheControl] = useState(asset.cacheControl);
  const [visibility, setVisibility] = useState(asset.visibility);
  const [error, setError] = useState<unknown>(null);
  const [notice, setNotice] = useState('');
  const [busy, setBusy] = useState(false);

  const submit = async (e: FormEvent) => {
    e.preventDefault();
    setError(null);
    setNotice('');
    const body: Record<string, string> = {};
    if (originalName.trim() !== asset.originalName) body.original_name = originalName.trim();
    if (cacheControl.trim() !== asset.cacheControl) body.cache_control = cacheControl.trim();
    if (visibility !== asset.visibility) body.visibility = visibility;
    if (Object.keys(body).length === 0) {
      setNotice('Nothing changed.');
      return;
    }
    setBusy(true);
    try {
      await api(`/api/v1/assets/${encodeURIComponent(asset.id)}`, {
        method: 'PATCH',
        body,
        headers: { 'if-match': `"${asset.revision}"` },
      });
      setNotice('Saved.');
      onSaved();
    } catch (err) {
      setError(err);
    } finally {
      setBusy(false);
    }
  };

  return (
    <details>
      <summary aria-label={`Edit details of ${asset.key}`}>Edit details</summary>
      <form className="stack tight" onSubmit={submit}>
        <label htmlFor={`${id}-name`}>Original name</label>
        <input
          id={`${id}-name`}
          type="text"
          required
          maxLength={255}
          value={originalName}
          onChange={(e) => setOriginalName(e.target.value)}
        />
        <label htmlFor={`${id}-cache`}>Cache control</label>
        <input
          id={`${id}-cache`}
          type="text"
          required
          maxLength={256}
          value={cacheControl}
          onChange={(e) => setCacheControl(e.target.value)}
        />
        <label htmlFor={`${id}-vis`}>Visibility</label>
        <select id={`${id}-vis`} value={visibility} onChange={(e) => setVisibility(e.target.value)}>
          <option value="public">Public</option>
          <option value="private">Private</option>
        </select>
        <ErrorMessage error={error} title="The details could not be saved" />
        <p role="status" className="notice">
          {notice}
        </p>
        <button type="submit" className="small" disabled={busy}>
          Save details
        </button>
      </form>
    </details>
  );
}
