package conduit

// AssignsOf is the assigns that opts set (WithAssigns; the last one wins),
// nil when none: for a layer that forwards a call to another process and
// must give the call's input callbacks there what they would have learnt
// here (package cluster keeps them beside the call while it runs).
func AssignsOf(opts ...CallOption) map[string]any {
	var o callOptions
	for _, opt := range opts {
		if opt != nil {
			opt(&o)
		}
	}
	return o.assigns
}

// ProgressTokenOf is the progress token that opts set (WithProgressToken;
// the last one wins), nil when none: for a layer that forwards a call to
// another process, which asks the server there for progress and sends it
// back under this token (package cluster).
func ProgressTokenOf(opts ...CallOption) any {
	var o callOptions
	for _, opt := range opts {
		if opt != nil {
			opt(&o)
		}
	}
	return o.progressToken
}
