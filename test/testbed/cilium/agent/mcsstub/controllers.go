// Package controllers stands in for sigs.k8s.io/mcs-api/controllers, which the
// module proxy does not serve. Cilium's non-test code uses only this constant.
package controllers

// DerivedServiceAnnotation is the annotation of a Service derived from a ServiceImport.
const DerivedServiceAnnotation = "multicluster.kubernetes.io/derived-service"
