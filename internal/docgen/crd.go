package docgen

import (
	"fmt"
	"slices"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"
)

// CRDReference renders a CRD (YAML as controller-gen writes it) as Markdown:
// its names, printer columns, and one table row per field of spec and
// status with its type, default, constraints and description, followed by
// the CEL rules the API server enforces.
func CRDReference(crdYAML []byte) (string, error) {
	var crd apiextensionsv1.CustomResourceDefinition
	if err := yaml.UnmarshalStrict(crdYAML, &crd); err != nil {
		return "", fmt.Errorf("reading the CRD: %w", err)
	}
	var b strings.Builder
	for _, v := range crd.Spec.Versions {
		if err := writeVersion(&b, &crd, v); err != nil {
			return "", err
		}
	}
	return strings.TrimRight(b.String(), "\n") + "\n", nil
}

// writeVersion writes one version's section.
func writeVersion(b *strings.Builder, crd *apiextensionsv1.CustomResourceDefinition, v apiextensionsv1.CustomResourceDefinitionVersion) error {
	if v.Schema == nil || v.Schema.OpenAPIV3Schema == nil {
		return fmt.Errorf("version %s has no schema", v.Name)
	}
	fmt.Fprintf(b, "### `%s` (`%s/%s`, %s", crd.Spec.Names.Kind, crd.Spec.Group, v.Name, strings.ToLower(string(crd.Spec.Scope)))
	if len(crd.Spec.Names.ShortNames) > 0 {
		fmt.Fprintf(b, ", short name `%s`", strings.Join(crd.Spec.Names.ShortNames, "`, `"))
	}
	b.WriteString(")\n\n")
	root := v.Schema.OpenAPIV3Schema
	b.WriteString(paragraph(root.Description) + "\n\n")
	writeColumns(b, v.AdditionalPrinterColumns)
	b.WriteString("| Field | Type | Default | Meaning and rules |\n| --- | --- | --- | --- |\n")
	var rules []string
	for _, top := range []string{"spec", "status"} {
		if s, ok := root.Properties[top]; ok {
			rules = walk(b, rules, top, s, slices.Contains(root.Required, top))
		}
	}
	if len(rules) > 0 {
		b.WriteString("\nRules the API server enforces at admission (CEL):\n\n")
		for _, r := range rules {
			b.WriteString("- " + r + "\n")
		}
	}
	b.WriteString("\n")
	return nil
}

func writeColumns(b *strings.Builder, cols []apiextensionsv1.CustomResourceColumnDefinition) {
	if len(cols) == 0 {
		return
	}
	names := make([]string, 0, len(cols))
	for _, c := range cols {
		wide := ""
		if c.Priority > 0 {
			wide = " (with `-o wide`)"
		}
		names = append(names, "`"+strings.ToUpper(c.Name)+"`"+wide)
	}
	b.WriteString("`kubectl get` columns: " + strings.Join(names, ", ") + ".\n\n")
}

// walk writes the row of s at path and of everything below it, and returns
// rules with s's CEL rules added.
func walk(b *strings.Builder, rules []string, path string, s apiextensionsv1.JSONSchemaProps, required bool) []string {
	fmt.Fprintf(b, "| `%s` | %s | %s | %s |\n", path, typeOf(s), defaultOf(s, required), cell(meaning(s)))
	for _, r := range s.XValidations {
		msg := r.Message
		if msg == "" {
			msg = "`" + r.Rule + "`"
		}
		rules = append(rules, fmt.Sprintf("`%s`: %s", path, msg))
	}
	props, req := s.Properties, s.Required
	if s.Type == "array" && s.Items != nil && s.Items.Schema != nil {
		props, req = s.Items.Schema.Properties, s.Items.Schema.Required
		path += "[]"
	}
	for _, name := range sortedKeys(props) {
		if path == "status.conditions[]" {
			break // metav1.Condition: documented by Kubernetes
		}
		rules = walk(b, rules, path+"."+name, props[name], slices.Contains(req, name))
	}
	return rules
}

func sortedKeys(m map[string]apiextensionsv1.JSONSchemaProps) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

func typeOf(s apiextensionsv1.JSONSchemaProps) string {
	switch {
	case s.Type == "array" && s.Items != nil && s.Items.Schema != nil:
		return typeOf(*s.Items.Schema) + " list"
	case s.Format != "":
		return s.Type + " (" + s.Format + ")"
	case s.Type == "":
		return "any"
	}
	return s.Type
}

func defaultOf(s apiextensionsv1.JSONSchemaProps, required bool) string {
	switch {
	case s.Default != nil:
		return "`" + string(s.Default.Raw) + "`"
	case required:
		return "(required)"
	}
	return ""
}

// meaning is the description with the schema's constraints appended.
func meaning(s apiextensionsv1.JSONSchemaProps) string {
	text := paragraph(s.Description)
	var c []string
	if len(s.Enum) > 0 {
		vals := make([]string, 0, len(s.Enum))
		for _, e := range s.Enum {
			vals = append(vals, "`"+strings.Trim(string(e.Raw), `"`)+"`")
		}
		c = append(c, "one of "+strings.Join(vals, ", "))
	}
	c = append(c, bounds(s)...)
	if s.Type == "array" && s.Items != nil && s.Items.Schema != nil {
		for _, ic := range bounds(*s.Items.Schema) {
			c = append(c, "each "+ic)
		}
	}
	if s.XListType != nil && *s.XListType == "set" {
		c = append(c, "no repeats")
	}
	if len(c) > 0 {
		text += " (" + strings.Join(c, "; ") + ")"
	}
	return strings.TrimSpace(text)
}

func bounds(s apiextensionsv1.JSONSchemaProps) []string {
	var c []string
	if s.Minimum != nil {
		c = append(c, fmt.Sprintf("≥ %g", *s.Minimum))
	}
	if s.Maximum != nil {
		c = append(c, fmt.Sprintf("≤ %g", *s.Maximum))
	}
	if s.MinLength != nil && *s.MinLength > 0 {
		c = append(c, fmt.Sprintf("at least %d characters", *s.MinLength))
	}
	if s.MaxLength != nil {
		c = append(c, fmt.Sprintf("at most %d characters", *s.MaxLength))
	}
	if s.MinItems != nil && *s.MinItems > 0 {
		c = append(c, fmt.Sprintf("at least %d items", *s.MinItems))
	}
	if s.MaxItems != nil {
		c = append(c, fmt.Sprintf("at most %d items", *s.MaxItems))
	}
	if s.Pattern != "" {
		c = append(c, "matches `"+s.Pattern+"`")
	}
	return c
}

// paragraph joins a Go doc comment's lines into one paragraph.
func paragraph(s string) string {
	return strings.Join(strings.Fields(s), " ")
}
