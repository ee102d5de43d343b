// Package controllers stands in for sigs.k8s.io/mcs-api/controllers, of which
// the module proxy serves no version. Cilium's non-test code uses only this
// constant, and none of it is linked into these tests.
package controllers

// DerivedServiceAnnotation marks a Service derived from a ServiceImport.
const DerivedServiceAnnotation = "multicluster.kubernetes.io/derived-service"
