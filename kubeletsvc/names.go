package kubeletsvc

// PodName returns "<namespace>/<name>" of a pod the kubelet-service made,
// from its pod annotations, and "" for other pods (for `rkt list`).
func PodName(podAnnotations map[string]string) string {
	if podAnnotations[annoKind] != kindSandbox {
		return ""
	}
	return podAnnotations[annoNamespace] + "/" + podAnnotations[annoName]
}

// ContainerName returns the Kubernetes container name of an app the
// kubelet-service made, from its app annotations, and "" for other apps
// (for `rkt app list`).
func ContainerName(appAnnotations map[string]string) string {
	if appAnnotations[annoKind] != kindContainer {
		return ""
	}
	return appAnnotations[annoName]
}

// ContainerID returns the CRI container ID of an app the kubelet-service
// made, and "" for other apps.
func ContainerID(appAnnotations map[string]string) string {
	if appAnnotations[annoKind] != kindContainer {
		return ""
	}
	return appAnnotations[annoContainerID]
}
