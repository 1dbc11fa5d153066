package messages

// FieldKind is what a form field asks for.
type FieldKind string

// The kinds of form field. A select's choices are its Options, whichever
// of the schema's enum shapes the server used (plain enum, enum with the
// legacy enumNames, titled oneOf, multi-select items with enum or titled
// anyOf).
const (
	FieldString      FieldKind = "string"      // free text, maybe with a Format
	FieldNumber      FieldKind = "number"      // any number
	FieldInteger     FieldKind = "integer"     // a whole number
	FieldBoolean     FieldKind = "boolean"     // yes or no
	FieldSelect      FieldKind = "select"      // one of Options (a string)
	FieldMultiSelect FieldKind = "multiselect" // some of Options (an array of strings)
)

// FieldOption is one choice of a select field.
type FieldOption struct {
	// Value is what the answer holds.
	Value string `json:"value"`
	// Title is the label the server gave the choice ("" when it gave none:
	// show the Value).
	Title string `json:"title,omitempty"`
}

// FormField is one field of an elicitation form, typed: a UI builds its
// prompt from it without reading JSON Schema. Text is as the server sent
// it (not sanitised). The guards fill it from a requestedSchema they
// accepted; conduit.CheckField (guards.CheckField) checks an answer value
// against it with the rules the guards apply before anything is sent.
// Its JSON (for a UI in another process) uses the schema's keyword names.
type FormField struct {
	// Name is the property name, the key of the answer.
	Name        string    `json:"name"`
	Kind        FieldKind `json:"kind"`
	Title       string    `json:"title,omitempty"` // "" when the schema gives none
	Description string    `json:"description,omitempty"`
	// Options are the choices of a select or multi-select, in the
	// schema's order.
	Options []FieldOption `json:"options,omitempty"`
	// Format is the string format the server named: "email", "uri",
	// "date" and "date-time" are checked; other values (such as
	// "password") are hints only.
	Format string `json:"format,omitempty"`
	// Bounds, nil when absent: characters of a string, the value of a
	// number or integer, the choices of a multi-select.
	MinLength *int     `json:"minLength,omitempty"`
	MaxLength *int     `json:"maxLength,omitempty"`
	Minimum   *float64 `json:"minimum,omitempty"`
	Maximum   *float64 `json:"maximum,omitempty"`
	MinItems  *int     `json:"minItems,omitempty"`
	MaxItems  *int     `json:"maxItems,omitempty"`
	// Default is the schema's default, nil when none: a string (string
	// and select), a json.Number (number and integer), a bool or a
	// []string (multi-select). It is filled in when the answer omits the
	// field.
	Default any `json:"default,omitempty"`
	// Required is true when the answer must hold the field (after
	// defaults are filled in).
	Required bool `json:"required"`
	// Sensitive is true for a field that looks like it asks for a secret
	// (the same flag as FieldInfo.SensitiveSuspected).
	Sensitive bool `json:"sensitive"`
}

// Reasons of a FieldError: the JSON Schema keyword the value breaks, except
// ReasonRange.
const (
	ReasonRequired  = "required"             // a required field is missing
	ReasonNotInForm = "additionalProperties" // the answer has a field the form does not
	ReasonType      = "type"                 // a value of the wrong JSON type (null included)
	ReasonEnum      = "enum"                 // not one of the options
	ReasonFormat    = "format"               // not a valid email, uri, date or date-time
	ReasonMinLength = "minLength"
	ReasonMaxLength = "maxLength"
	ReasonMinimum   = "minimum"
	ReasonMaximum   = "maximum"
	ReasonMinItems  = "minItems"
	ReasonMaxItems  = "maxItems"
	ReasonRange     = "range" // a number too long or too large to handle exactly
)

// FieldError says why an elicitation answer does not fit its form. Find it
// with errors.As. Its message names the field and the rule, never the
// value (the value may be a secret, and in the legacy era the message is
// sent to the server).
type FieldError struct {
	// Field is the name of the field at fault.
	Field string `json:"field"`
	// Reason is the rule broken, one of the Reason constants.
	Reason string `json:"reason"`
	// Message says it in words.
	Message string `json:"message"`
}

func (e *FieldError) Error() string { return e.Message }
