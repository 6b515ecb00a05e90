// The provisioning script the resource-verb tests run: what a real cluster script keeps in one file.

/** 10 pools, 3 reservations, the IPAM configuration and two labelled nodes: one file, as a script keeps it. */
export function provisioningScript(): string {
  const docs: string[] = []
  for (let i = 0; i < 10; i++)
    docs.push(`apiVersion: projectcalico.org/v3
kind: IPPool
metadata:
  name: pool-${i}
  labels: {tier: t${i % 3}}
spec:
  cidr: 10.${100 + i}.0.0/24
  blockSize: 28
  nodeSelector: rack == "r${i % 2}"
  natOutgoing: ${i % 2 === 0}
`)
  for (let i = 0; i < 3; i++)
    docs.push(`apiVersion: projectcalico.org/v3
kind: IPReservation
metadata: {name: res-${i}}
spec:
  reservedCIDRs: [10.${100 + i}.0.0/30, 10.${100 + i}.0.255]
`)
  docs.push(`apiVersion: projectcalico.org/v3
kind: IPAMConfiguration
metadata: {name: default}
spec: {strictAffinity: true, maxBlocksPerHost: 8, autoAllocateBlocks: true}
`)
  docs.push(`{"kind": "List", "apiVersion": "v1", "items": [
  {"apiVersion": "projectcalico.org/v3", "kind": "Node", "metadata": {"name": "node-a", "labels": {"rack": "r0"}}},
  {"apiVersion": "projectcalico.org/v3", "kind": "Node", "metadata": {"name": "node-b", "labels": {"rack": "r1"}}}
]}
`)
  return docs.join('---\n')
}
