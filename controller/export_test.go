package controller

import corev1 "k8s.io/api/core/v1"

// DeployObjects decodes deploy/*.yaml strictly, for the integration tests of
// package controller_test that apply those manifests to a cluster.
var DeployObjects = deployObjects

// nodesOnly is listNodes without its index.
func (c *Controller) nodesOnly() []*corev1.Node {
	nodes, _ := c.listNodes()
	return nodes
}
