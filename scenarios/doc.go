// Package scenarios defines the dsbench scenario format (dsbench.dev/v1alpha1,
// kind Scenario): its types, YAML decoding with file:line:column errors,
// validation, scaling, seeded node selection and the embedded library of
// built-in scenarios. See README.md for the format.
package scenarios
