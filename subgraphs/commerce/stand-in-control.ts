import type { DeploymentHealth } from './stand-in';

/**
 * The stand-in's control routes, as the CLI drives them (stores, webhook emission, the health of
 * deployed releases). Nothing here is part of the commerce platform's API the area relies on.
 */
export class StandInControl {
  constructor(private readonly baseUrl: () => string) {}

  private async post<T>(path: string, body: unknown, method = 'POST'): Promise<T> {
    const res = await fetch(`${this.baseUrl().replace(/\/$/, '')}${path}`, {
      method,
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body),
      signal: AbortSignal.timeout(15_000),
    });
    const text = await res.text();
    const parsed = text ? (JSON.parse(text) as T & { errors?: string }) : ({} as T & { errors?: string });
    if (!res.ok) throw new Error(`commerce platform stand-in answered ${res.status}: ${parsed.errors ?? text}`);
    return parsed;
  }

  createStore(domain: string) {
    return this.post<{ store_domain: string; admin_token: string; storefront_token: string }>('/_standin/stores', {
      domain,
    });
  }

  emitWebhook(domain: string, topic: string, payload?: unknown) {
    return this.post<{ webhook_id: string; deliveries: Array<{ status: number | null }> }>(
      `/_standin/stores/${encodeURIComponent(domain)}/webhooks`,
      { topic, payload },
    );
  }

  createDeployment(storeDomain: string, health: DeploymentHealth) {
    return this.post<{ deployment_id: string; health_url: string }>('/_standin/deployments', {
      store_domain: storeDomain,
      health,
    });
  }

  setDeploymentHealth(deploymentId: string, health: DeploymentHealth) {
    return this.post<{ deployment_id: string; health: DeploymentHealth }>(
      `/_standin/deployments/${encodeURIComponent(deploymentId)}`,
      { health },
      'PUT',
    );
  }
}
