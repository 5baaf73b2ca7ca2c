package controller

// DeployObjects decodes deploy/*.yaml strictly, for the integration tests of
// package controller_test that apply those manifests to a cluster.
var DeployObjects = deployObjects
